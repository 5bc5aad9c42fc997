import { spawnSync } from "node:child_process";
import { closeSync, constants, fstatSync, openSync, readSync, renameSync, statSync, unlinkSync, writeSync } from "node:fs";
import { release } from "node:os";
import { join } from "node:path";
import { TEAMD_VERSION } from "../../src/rpc/protocol.js";
import type { HostFingerprint, SelftestDocument } from "../../src/selftest/map.js";
import type { TeamdHome } from "./home.js";

/**
 * The last `teamd selftest` on this machine: TEAMD_HOME/selftest.json, the run's whole
 * `teamd.selftest/1` document, owner-only (0600), written whole (a temporary file, then rename) and
 * read without following a link. What it means for seats (§11: "when containment exists and fails,
 * work stops"): the daemon refuses a contained seat's start while it says `failed`
 * (`containment.selftest-failed`); where none has run since teamd, bubblewrap or the kernel changed,
 * start and status say containment is unproven on this host — a warning, not a refusal.
 */
export const SELFTEST_FILE = "selftest.json";
/** The record is a few tens of KB; anything larger is not ours. */
const MAX_BYTES = 1024 * 1024;
const BWRAP_CANDIDATES = ["/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"];

export function selftestPath(home: TeamdHome): string {
  return join(home.root, SELFTEST_FILE);
}

/** What a selftest's result is bound to: teamd's version, bubblewrap's, the kernel's release. */
export function hostFingerprint(bwrap: () => string = askBwrapVersion): HostFingerprint {
  return { teamd: TEAMD_VERSION, bwrap: bwrap(), kernel: release(), arch: process.arch };
}

/** The first bubblewrap found, and its identity (device, inode, size, modification and change times). */
function findBwrap(): { path: string; identity: string } | undefined {
  for (const path of BWRAP_CANDIDATES) {
    try {
      const s = statSync(path);
      return { path, identity: `${path}:${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}` };
    } catch {
      continue;
    }
  }
  return undefined;
}

function versionOf(path: string): { version: string; answered: boolean } {
  const out = spawnSync(path, ["--version"], { encoding: "utf8", timeout: 5_000 });
  return { version: (out.stdout ?? "").trim().split("\n")[0] || `${path} (version unknown)`, answered: out.status === 0 };
}

function askBwrapVersion(): string {
  const found = findBwrap();
  return found === undefined ? "none" : versionOf(found.path).version;
}

/**
 * bubblewrap's version, asked again only when another file answers to its name: the daemon
 * reads the selftest's standing on every `teamd status`, and `bwrap --version` each time cost
 * its event loop ~3 ms a call (issue 26). A run that did not answer is not remembered.
 */
export function rememberedBwrapVersion(): () => string {
  let asked: { readonly identity: string; readonly version: string } | undefined;
  return () => {
    const found = findBwrap();
    if (found === undefined) return "none";
    if (asked?.identity === found.identity) return asked.version;
    const { version, answered } = versionOf(found.path);
    asked = answered ? { identity: found.identity, version } : undefined;
    return version;
  };
}

export function writeSelftestRecord(home: TeamdHome, doc: SelftestDocument, pid: number = process.pid): void {
  const path = selftestPath(home);
  const temporary = `${path}.${pid}.tmp`;
  const fd = openSync(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    writeSync(fd, JSON.stringify(doc, null, 1) + "\n");
  } catch (error) {
    closeSync(fd);
    unlinkSync(temporary);
    throw error;
  }
  closeSync(fd);
  renameSync(temporary, path);
}

export type SelftestStanding =
  | { readonly kind: "passed"; readonly doc: SelftestDocument }
  /** The last run found containment broken: contained seats do not start. */
  | { readonly kind: "failed"; readonly doc: SelftestDocument; readonly reason: string }
  /** None has run, it was incomplete, or teamd, bubblewrap or the kernel changed since: unproven here. */
  | { readonly kind: "unproven"; readonly reason: string; readonly doc?: SelftestDocument };

/** The last record, or why there is none (absent, unreadable, not ours). */
export function readSelftestRecord(home: TeamdHome): { doc: SelftestDocument } | { missing: string } {
  let fd: number;
  try {
    fd = openSync(selftestPath(home), constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { missing: code === "ENOENT" ? "no selftest has run on this host" : `the last selftest's record cannot be read (${code})` };
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile() || stat.size > MAX_BYTES) return { missing: "the last selftest's record is not a file teamd wrote" };
    const buffer = Buffer.alloc(stat.size);
    readSync(fd, buffer, 0, stat.size, 0);
    const doc = JSON.parse(buffer.toString("utf8")) as SelftestDocument;
    if (doc.schema !== "teamd.selftest/1" || !Array.isArray(doc.rows)) return { missing: "the last selftest's record has another schema" };
    return { doc };
  } catch {
    return { missing: "the last selftest's record does not parse" };
  } finally {
    closeSync(fd);
  }
}

export function selftestStanding(home: TeamdHome, now: HostFingerprint = hostFingerprint()): SelftestStanding {
  const read = readSelftestRecord(home);
  if ("missing" in read) return { kind: "unproven", reason: `containment is unproven on this host: ${read.missing}; run teamd selftest` };
  const { doc } = read;
  // A broken result stands until a selftest passes again, whatever changed since: fail closed.
  if (doc.status === "failed") {
    const rows = doc.rows.filter((r) => r.here === "broken").map((r) => r.id);
    return {
      kind: "failed",
      doc,
      reason: `the last selftest on this host (${doc.startedAt}) found containment broken (${rows.join(", ") || "see teamd selftest"}); contained seats do not start until \`teamd selftest\` passes`,
    };
  }
  const changed = (["teamd", "bwrap", "kernel", "arch"] as const).filter((k) => doc.host[k] !== now[k]).map((k) => `${k} ${doc.host[k]} -> ${now[k]}`);
  if (changed.length)
    return {
      kind: "unproven",
      doc,
      reason: `containment is unproven on this host: changed since the last selftest (${changed.join(", ")}); run teamd selftest`,
    };
  if (doc.status !== "passed")
    return {
      kind: "unproven",
      doc,
      reason: `containment is unproven on this host: the last selftest (${doc.startedAt}) was ${doc.status}; run teamd selftest`,
    };
  return { kind: "passed", doc };
}

/** What start and status say of the last selftest (status --json: `selftest`, docs/status.md). */
export interface SelftestSummary {
  readonly standing: SelftestStanding["kind"];
  /** When the last run started (ISO 8601), if there is one. */
  readonly at?: string;
  /** Why it is not `passed`. */
  readonly reason?: string;
}

export function selftestSummary(home: TeamdHome, now: HostFingerprint = hostFingerprint()): SelftestSummary {
  const s = selftestStanding(home, now);
  return {
    standing: s.kind,
    ...(s.doc ? { at: s.doc.startedAt } : {}),
    ...(s.kind === "passed" ? {} : { reason: s.reason }),
  };
}
