import { isAbsolute } from "node:path";
import { RecordType, TargetKind } from "../gen/teamd/v1/ledger_pb.js";
import { refuse } from "../kernel/decision.js";
import { daemonPrincipal, toHex, toSafeNumber } from "./codec.js";
import type { AppendResult } from "./commit.js";
import { ArchiveExists, writeArchiveFile } from "./archive-file.js";
import { describeNeeded, planCut, type CutPlan } from "./archive-plan.js";
import { ARCHIVE_ACTION, CUT_ACTION, findCut } from "./cut.js";
import { LedgerRefusal } from "./errors.js";
import type { Flags } from "./flags.js";
import type { DaemonSigner, PublicKey } from "./keys.js";
import { checkOwnerAct, isRefusal } from "./owner-act.js";
import { daemonRecord, ownerRecord, type PendingRecord } from "./record.js";
import { readSeal } from "./seal.js";
import type { LedgerState } from "./state.js";
import type { LedgerStore } from "./store.js";
import type { LedgerView } from "./view.js";

/**
 * Archival (§15 "archival moves records and keeps the head commitment"; docs/records.md
 * "Archival"): the owner's signed act moves the records below a cut out of the live store into
 * an archive file, keeping what the gate still reads (archive-plan.ts). In order, each step
 * only once the one before it is durable, so a crash anywhere loses nothing:
 *
 * 1. plan: the cut is rounded down to a commit batch's first record (a seal is never split);
 *    the kept records are found; a cut through a record the gate reads is refused, naming the
 *    records, the rule (`ledger.archive-needed`) and the fix, unless the act says `keep`;
 * 2. write the archive file (archive-file.ts: temp, fsync, link, never over a file) — a crash
 *    here leaves at most a temp file or an archive the ledger never names; the live store is
 *    untouched;
 * 3. record the owner's act and the daemon's cut record in one batch (the cut record names the
 *    cut, the hash the chain resumes from, the kept records and the file's SHA-256); the head
 *    moves past them, so a copy of the store from before the archive is a rollback;
 * 4. drop the archived records (store.removeArchived) and reopen: the view is rebuilt from the
 *    live store alone. A crash between 3 and 4 leaves the records in place; the next open walks
 *    them whole, checks the cut's hash, and drops them then (ledger.ts).
 *
 * A replay of the same signed act is answered with its first record and does nothing again.
 */

export interface ArchiveOptions {
  /** Is this commit on one of the team's trunks? (the hub's answer; without it every done push stays) */
  readonly merged?: (team: string, commit: string) => boolean;
  readonly progress?: (phase: "plan" | "write", done: number, total: number) => void;
  /** Tests: called after each durable step; a throw stops the archive there, as a crash would. */
  readonly onStep?: (step: "planned" | "written" | "recorded") => void;
}

export interface ArchiveReceipt {
  /** The owner act's record. */
  readonly seq: number;
  readonly replayed: boolean;
  readonly fromSeq: number;
  readonly cutSeq: number;
  readonly archived: number;
  readonly kept: readonly { readonly seq: number; readonly type: string; readonly why: string }[];
  readonly file: string;
  readonly fileDigest: string;
}

export interface ArchiveDeps {
  readonly ownerKey: PublicKey;
  readonly signer: DaemonSigner;
  readonly flags: Flags;
  readonly clock: () => number;
  view(): LedgerView;
  state(): LedgerState;
  store(): LedgerStore | undefined;
  enqueue(pending: PendingRecord): Promise<AppendResult>;
  /** Drop what the cut record just committed (its seq) moved out, and rebuild the view from the live store. */
  dropAndReopen(cutRecordSeq: number): Promise<LedgerState>;
}

/** Round a cut down to the first record of the commit batch holding it (a seal is never split), at most the tip + 1. */
export function alignCut(store: LedgerStore, beforeSeq: number, daemonKey: PublicKey): number {
  const tip = store.tip()?.seq ?? -1;
  if (beforeSeq > tip) return tip + 1;
  const [seal] = store.seals(beforeSeq, 1);
  if (seal === undefined) return beforeSeq;
  return Math.min(beforeSeq, readSeal(seal.body, daemonKey, false).firstSeq);
}

export async function archiveLedger(deps: ArchiveDeps, actBytes: Uint8Array, options: ArchiveOptions = {}): Promise<ArchiveReceipt> {
  const act = checkOwnerAct(actBytes, deps.ownerKey);
  if (isRefusal(act)) throw LedgerRefusal.of(act);
  const detail = act.payload.detail;
  if (act.proposal.type !== RecordType.ARCHIVE || act.proposal.action !== ARCHIVE_ACTION || detail.case !== "archive")
    throw new LedgerRefusal("owner.act-invalid", "an archive act is an ARCHIVE record of action 'archive' with its request");
  const request = detail.value;
  const prior = deps.view().ownerAct(act.id);
  if (prior !== undefined) return replayed(deps, prior, request.file);
  const state = deps.state();
  if (state.status !== "ready") throw new LedgerRefusal("ledger.unavailable", `the ledger is ${state.status}; an archive needs a ready ledger`);
  const store = deps.store();
  if (store === undefined) throw new LedgerRefusal("ledger.unavailable", "the ledger store is not open");
  if (!isAbsolute(request.file)) throw new LedgerRefusal("owner.act-invalid", `the archive file must be an absolute path, not ${request.file}`);

  const previous = findCut(store);
  const fromSeq = previous?.cutSeq ?? 0;
  const cutSeq = alignCut(store, toSafeNumber(request.beforeSeq, "before seq"), deps.signer.publicKey);
  if (cutSeq <= Math.max(fromSeq, 1)) {
    throw new LedgerRefusal(
      "owner.act-invalid",
      fromSeq > 0
        ? `nothing to archive before record ${cutSeq}: the records before ${fromSeq} are archived already (cut record ${previous?.seq})`
        : `nothing to archive before record ${cutSeq} (record 0 is the genesis; cut later)`,
    );
  }
  const flagRead = deps.flags.read();
  const plan: CutPlan = await planCut({
    reader: store,
    view: deps.view(),
    now: deps.clock(),
    fromSeq,
    cutSeq,
    flagIds: new Set(flagRead.flags.map((f) => f.id)),
    revocationFlags: new Set(flagRead.flags.flatMap((f) => (f.kind === "revocation" && f.subject !== undefined ? [f.subject] : []))),
    merged: options.merged,
    progress: (done, total) => options.progress?.("plan", done, total),
  });
  if (!request.keep && plan.kept.some((k) => !k.frame)) throw LedgerRefusal.of(refuse("ledger.archive-needed", describeNeeded(plan)));
  options.onStep?.("planned");

  const view = deps.view();
  let fileDigest: Uint8Array;
  try {
    fileDigest = await writeArchiveFile({
      path: request.file,
      source: store,
      fromSeq,
      cutSeq,
      cutHash: plan.cutHash,
      startHash: previous?.cutHash,
      signer: deps.signer,
      time: deps.clock(),
      tombstoned: (seq) => view.tombstoneOf(seq) !== undefined,
      progress: (done, total) => options.progress?.("write", done, total),
    });
  } catch (error) {
    if (error instanceof ArchiveExists) throw new LedgerRefusal("owner.act-invalid", error.message);
    throw error;
  }
  options.onStep?.("written");

  const cutRecord = daemonRecord({
    type: RecordType.ARCHIVE,
    actor: daemonPrincipal(),
    action: CUT_ACTION,
    payload: {
      target: { kind: TargetKind.LEDGER, name: request.file },
      detail: {
        case: "archive",
        value: {
          beforeSeq: request.beforeSeq,
          file: request.file,
          keep: request.keep,
          cutSeq: BigInt(cutSeq),
          cutHash: plan.cutHash,
          fromSeq: BigInt(fromSeq),
          kept: plan.kept.map((k) => ({ seq: BigInt(k.seq), hash: k.hash, why: k.why })),
          archived: BigInt(plan.archived),
          fileDigest,
          spentActs: [...plan.spentActs],
        },
      },
    },
  });
  // The live store's tip may have moved since the plan: records at or past the cut are never touched.
  const recorded = await deps.enqueue(ownerRecord(act, { companions: [cutRecord] }));
  options.onStep?.("recorded");
  // The cut record is the act's companion: the record right after it.
  const reopened = await deps.dropAndReopen(recorded.seq + 1);
  if (reopened.status !== "ready") throw new LedgerRefusal("ledger.unavailable", `the archive is recorded but the ledger reopened ${reopened.status}`);
  return {
    seq: recorded.seq,
    replayed: false,
    fromSeq,
    cutSeq,
    archived: plan.archived,
    kept: plan.kept.map((k) => ({ seq: k.seq, type: RecordType[k.type]?.toLowerCase() ?? String(k.type), why: k.why })),
    file: request.file,
    fileDigest: toHex(fileDigest),
  };
}

function replayed(deps: ArchiveDeps, seq: number, file: string): ArchiveReceipt {
  const cut = deps.store() && findCut(deps.store() as LedgerStore);
  return {
    seq,
    replayed: true,
    fromSeq: cut?.fromSeq ?? 0,
    cutSeq: cut?.cutSeq ?? 0,
    archived: 0,
    kept: [],
    file,
    fileDigest: cut ? toHex(cut.fileDigest) : "",
  };
}
