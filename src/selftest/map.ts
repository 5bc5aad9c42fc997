import type { AttackResult, Fault } from "./runner.js";
import { ENFORCEMENT_ROWS, type Strength } from "./rows.js";

/**
 * The enforcement map for this machine, `teamd.selftest/1` (docs/selftest.md is its reference):
 * every row of docs/enforcement.md with what the documentation claims, what holds here, the
 * attacks that decided it and — where they differ — why and the fix. Pure: built from the run's
 * results and the host's facts.
 */
export const SELFTEST_SCHEMA = "teamd.selftest/1";

/**
 * Here: "A" (every attack of the row held, each with its control), "partial" (A for what was
 * attacked; the rest not on this host, as the documentation itself conditions it), "broken" (an
 * attack got through: containment is broken here), "unproven" (an attack's control failed or it
 * could not run: nothing is claimed), or the documented strength where the row is not host-bound.
 */
export type Here = Strength | "partial" | "broken" | "unproven";

export interface MapRow {
  readonly id: string;
  readonly piece: string;
  readonly documented: Strength;
  readonly here: Here;
  /** Attacks run for this row (ids of `attacks`), empty where the row is not host-bound. */
  readonly attacks: readonly string[];
  /** Why this row is not attacked here (not host-bound), or what differs from the documentation and why. */
  readonly note?: string;
  readonly fix?: string;
  /** False when this machine holds less than the documentation claims for it. */
  readonly asDocumented: boolean;
}

export interface HostFingerprint {
  readonly teamd: string;
  readonly bwrap: string;
  readonly kernel: string;
  readonly arch: string;
}

export type SelftestStatus = "passed" | "failed" | "incomplete";

export interface SelftestDocument {
  readonly schema: typeof SELFTEST_SCHEMA;
  /** passed: every row as documented; failed: an attack got through (containment broken here); incomplete: none got through, but some could not be proven. */
  readonly status: SelftestStatus;
  readonly host: HostFingerprint & { readonly mode: "system" | "user"; readonly seatUid: number };
  readonly startedAt: string;
  readonly durationMs: number;
  /** The rows and attacks asked for (--only), or absent: all. A partial run never makes a host proven. */
  readonly only?: readonly string[];
  /** Set only by the test harness: the defence broken on purpose. */
  readonly fault?: Fault;
  readonly rows: readonly MapRow[];
  readonly attacks: readonly AttackResult[];
  /** Anything the run could not remove (expected: none). */
  readonly leftovers: readonly string[];
}

export function buildMap(attacks: readonly AttackResult[]): MapRow[] {
  return ENFORCEMENT_ROWS.map((row) => {
    if (row.basis.kind === "not-host-bound")
      return { id: row.id, piece: row.piece, documented: row.documented, here: row.documented, attacks: [], note: row.basis.reason, asDocumented: true };
    const own = attacks.filter((a) => a.rows.includes(row.id));
    const ids = own.map((a) => a.id);
    const broken = own.filter((a) => a.outcome === "broken");
    const unproven = own.filter((a) => a.outcome === "unproven");
    const notHere = own.filter((a) => a.outcome === "not-here");
    const fixes = [...new Set([...broken, ...unproven, ...notHere].map((a) => a.fix).filter((f): f is string => f !== undefined))];
    const fix = fixes.length ? { fix: fixes.join("; ") } : {};
    if (own.length === 0)
      return { id: row.id, piece: row.piece, documented: row.documented, here: "unproven", attacks: [], note: "not run (--only)", asDocumented: false };
    if (broken.length)
      return {
        id: row.id,
        piece: row.piece,
        documented: row.documented,
        here: "broken",
        attacks: ids,
        note: broken.map((a) => `${a.claim}: got through (${a.detail})`).join("; "),
        fix: fixes.length
          ? fixes.join("; ")
          : "do not run seats here: find what differs from a host where `teamd selftest` passes (kernel, bubblewrap, AppArmor/SELinux), fix it, then run `teamd selftest` again",
        asDocumented: false,
      };
    if (unproven.length)
      return {
        id: row.id,
        piece: row.piece,
        documented: row.documented,
        here: "unproven",
        attacks: ids,
        note: unproven.map((a) => `${a.claim}: ${a.detail}`).join("; "),
        ...fix,
        asDocumented: false,
      };
    if (notHere.length)
      return {
        id: row.id,
        piece: row.piece,
        documented: row.documented,
        here: "partial",
        attacks: ids,
        note: notHere.map((a) => `${a.claim}: not here — ${a.detail}${a.documentedCondition ? ` (${a.documentedCondition})` : ""}`).join("; "),
        ...fix,
        // The documentation conditions each of these itself: less here, but as documented.
        asDocumented: notHere.every((a) => a.documentedCondition !== undefined),
      };
    return { id: row.id, piece: row.piece, documented: row.documented, here: "A", attacks: ids, asDocumented: true };
  });
}

export function statusOf(attacks: readonly AttackResult[]): SelftestStatus {
  if (attacks.some((a) => a.outcome === "broken")) return "failed";
  if (attacks.some((a) => a.outcome === "unproven")) return "incomplete";
  return "passed";
}

/** The map as the owner reads it. */
export function renderMap(doc: SelftestDocument): string {
  const lines: string[] = [];
  lines.push(
    `teamd selftest: the enforcement map for this machine (teamd ${doc.host.teamd}, ${doc.host.bwrap}, kernel ${doc.host.kernel}, ${doc.host.arch}, ${doc.host.mode} mode, seats as uid ${doc.host.seatUid})`,
  );
  if (doc.fault) lines.push(`FAULT INJECTED (test harness): ${doc.fault}`);
  lines.push("");
  for (const row of doc.rows) {
    if (row.attacks.length === 0 && row.here === row.documented) continue;
    const mark = row.here === row.documented ? "  " : row.asDocumented ? "~ " : "! ";
    lines.push(`${mark}${row.here.padEnd(9)} ${row.piece}${row.here !== row.documented ? `   (documented: ${row.documented})` : ""}`);
    for (const id of row.attacks) {
      const a = doc.attacks.find((x) => x.id === id);
      if (a) lines.push(`      ${a.outcome.padEnd(8)} ${a.claim} — ${a.detail}${a.documentedCondition ? ` (as documented: ${a.documentedCondition})` : ""}`);
    }
    if (row.fix && row.here !== "A") lines.push(`      fix: ${row.fix}`);
  }
  const fixedRows = doc.rows.filter((r) => r.attacks.length === 0 && r.here === r.documented);
  lines.push("");
  lines.push(
    `${fixedRows.length} more rows hold here as documented without a host attack (they do not depend on the host: teamd selftest --json names why for each).`,
  );
  if (doc.leftovers.length) lines.push(`left behind (remove by hand): ${doc.leftovers.join(", ")}`);
  lines.push(
    doc.status === "passed"
      ? `verdict: passed — every row holds here as docs/enforcement.md says (${(doc.durationMs / 1000).toFixed(1)} s)`
      : doc.status === "failed"
        ? `verdict: FAILED — containment is broken on this machine; teamd start refuses seats until \`teamd selftest\` passes (${(doc.durationMs / 1000).toFixed(1)} s)`
        : `verdict: incomplete — nothing got through, but some attacks could not be proven here (see unproven above) (${(doc.durationMs / 1000).toFixed(1)} s)`,
  );
  return lines.join("\n") + "\n";
}
