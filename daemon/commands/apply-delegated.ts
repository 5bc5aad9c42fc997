import type { PolicyInForceResponse } from "../../src/gen/teamd/v1/control_pb.js";
import { applyDelegatedChange, canonicalJson, describeChange, type DelegatedChange } from "../../src/kernel/index.js";
import { loadTeamFileData, type LoadedPolicy } from "../../src/teamfile/index.js";
import { RefusalError, UsageError } from "../../src/rpc/errors.js";

/**
 * The owner's apply over delegated grants (§10). Delegates' grants and agreements since the
 * owner's last apply are in force and not in the owner's file. Applying the file as it is
 * would take them back — a revocation that stays taken, with its cascade — so that is never
 * done silently: without a flag the apply is refused and lists them; `--keep-delegated`
 * applies the file with each of them made again over it (one agreement is a whole file);
 * `--drop-delegated` applies the file as written. A change the file already says drops nothing.
 */
export interface DelegatedInForce {
  readonly seq: number;
  readonly words: string;
  readonly change: DelegatedChange | undefined;
}

export function delegatedInForce(inForce: PolicyInForceResponse): DelegatedInForce[] {
  return inForce.delegated.map((d) => {
    let change: DelegatedChange | undefined;
    try {
      change = JSON.parse(d.change) as DelegatedChange;
    } catch {
      change = undefined;
    }
    const by = `${d.signer}${d.coAuthorizer !== "" ? ` with ${d.coAuthorizer}` : ""}`;
    return { seq: Number(d.seq), change, words: `record ${d.seq} (${d.kind} by ${by}): ${change !== undefined ? describeChange(change) : "unreadable"}` };
  });
}

function seatIn(data: unknown, seat: string): string | undefined {
  const seats = (data as { seats?: unknown } | null)?.seats;
  if (seats === null || typeof seats !== "object" || !Object.prototype.hasOwnProperty.call(seats, seat)) return undefined;
  return canonicalJson((seats as Record<string, unknown>)[seat] as never);
}

/**
 * The file's canonical data with every delegated change made again over it; what no longer
 * applies, named. A seat a delegate added is kept as it is in force — what was agreed or granted
 * (§10: a new seat's list is whatever its agreed copy or grant says) — never as a copy of what
 * the file now says of the seat it was copied from (which may hold more).
 */
function keepOver(fileCanonical: string, delegated: readonly DelegatedInForce[]): { data: unknown; notApplying: string[] } {
  let data: unknown = JSON.parse(fileCanonical);
  const notApplying: string[] = [];
  for (const d of delegated) {
    if (d.change === undefined) {
      notApplying.push(d.words);
      continue;
    }
    const next = applyDelegatedChange(data, d.change);
    if ("decision" in next) notApplying.push(`${d.words} — ${next.reason}`);
    else data = next.data;
  }
  return { data, notApplying };
}

/**
 * A seat a delegate added is kept as it is in force (what was agreed or granted), never a re-copy
 * of what the owner's file now gives its source: compared in canonical form, after loading.
 */
function widenedCopies(keptCanonical: string, inForceCanonical: string, delegated: readonly DelegatedInForce[]): string[] {
  const kept = JSON.parse(keptCanonical) as unknown;
  const inForce = JSON.parse(inForceCanonical) as unknown;
  const out: string[] = [];
  for (const d of delegated) {
    if (d.change?.kind !== "add-seat") continue;
    const agreed = seatIn(inForce, d.change.seat);
    const now = seatIn(kept, d.change.seat);
    if (agreed !== undefined && now !== undefined && now !== agreed)
      out.push(`${d.words} — ${d.change.like} changed in your file, so the copy kept would differ from the seat in force (what was agreed)`);
  }
  return out;
}

/**
 * What to apply: the file as loaded, or — with `--keep-delegated` — the file with the delegated
 * changes kept. Throws the refusal that names them when the file would drop one and no flag says how.
 */
export function withDelegated(
  inForce: PolicyInForceResponse,
  file: LoadedPolicy,
  options: { keepDelegated?: boolean; dropDelegated?: boolean },
): { applied: LoadedPolicy; kept: number; dropped: readonly string[] } {
  if (options.keepDelegated && options.dropDelegated) throw new UsageError("--keep-delegated and --drop-delegated: choose one");
  const delegated = delegatedInForce(inForce);
  // The file is the policy in force (an export): it says every delegated change, and drops none.
  if (delegated.length === 0 || file.hashes.policy === inForce.teamFileHash) return { applied: file, kept: 0, dropped: [] };
  const replayed = keepOver(file.canonical, delegated);
  const loadedKept = loadTeamFileData(replayed.data, { startFileHashes: { ...file.startFiles }, proposal: true });
  const kept = {
    notApplying: [...replayed.notApplying, ...(loadedKept.ok ? widenedCopies(loadedKept.canonical, inForce.canonical, delegated) : [])],
  };
  // Nothing dropped: the file already says every delegated change (an export applied, or the same edits made by hand).
  if (kept.notApplying.length === 0 && loadedKept.ok && loadedKept.hashes.policy === file.hashes.policy) return { applied: file, kept: 0, dropped: [] };
  const listed = delegated.map((d) => `  ${d.words}`).join("\n");
  if (options.dropDelegated) return { applied: file, kept: 0, dropped: delegated.map((d) => d.words) };
  if (!options.keepDelegated) {
    throw new RefusalError(
      "policy.delegated",
      `the policy in force holds ${delegated.length} delegated change(s) your file does not say (§10):\n${listed}\n` +
        "applying the file as it is would take them back. Choose: --keep-delegated (apply your file with them kept), --drop-delegated (take them back; " +
        "the leases rooted in them are revoked with them), or teamd policy export (write the policy in force to your file, then edit and apply); nothing was applied",
    );
  }
  if (kept.notApplying.length > 0)
    throw new RefusalError(
      "policy.delegated",
      `these delegated changes no longer apply over your file:\n${kept.notApplying.map((w) => `  ${w}`).join("\n")}\nedit the file, or apply with --drop-delegated; nothing was applied`,
    );
  if (!loadedKept.ok)
    throw new RefusalError(
      loadedKept.errors[0]?.rule ?? "teamfile.schema",
      `your file with the delegated changes kept does not load: ${loadedKept.errors[0]?.message ?? "invalid"}; apply with --drop-delegated, or edit the file; nothing was applied`,
    );
  return { applied: loadedKept, kept: delegated.length, dropped: [] };
}
