import { mkdir } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import { PrincipalKind, RecordType, StopScope, TargetKind } from "../gen/teamd/v1/ledger_pb.js";
import { refuse, type Refusal } from "../kernel/decision.js";
import { archiveLedger } from "./archive.js";
import { bytesEqual, headerHash } from "./codec.js";
import { findCut } from "./cut.js";
import { commitBatch, type AppendResult, type CommitContext } from "./commit.js";
import { createDecisionCache } from "./decision-cache.js";
import { createDispatcher } from "./dispatch.js";
import { describeRecord, describeStored, type LedgerEntry } from "./entry.js";
import { describeError, LedgerRefusal } from "./errors.js";
import { createFlags, type Flag, type Flags } from "./flags.js";
import { createGroupCommit } from "./group-commit.js";
import { cleanHeadTemps, readHeadFile, writeHeadFile, type HeadRead } from "./head-file.js";
import { createHeadFileWriter } from "./head-file-writer.js";
import { createHeadWriter } from "./head-writer.js";
import { publicKeyFromRaw } from "./keys.js";
import type { AppendedRecord, Ledger, LedgerOptions } from "./ledger-api.js";
import { checkLedger } from "./open-check.js";
import type { HeadObservation } from "./owner-act.js";
import { createOwnerActs } from "./owner-acts.js";
import { ledgerPaths } from "./paths.js";
import { daemonRecord, flagRecord, type PendingRecord } from "./record.js";
import { recoverIntents } from "./recovery.js";
import type { Head } from "./seal.js";
import type { LedgerState } from "./state.js";
import { openStore, type LedgerStore } from "./store.js";
import { openStoreWriter, type StoreWriter } from "./store-writer.js";
import { verifyStore } from "./verify.js";
import { createView, type ViewProjector } from "./view.js";
import { acquireWriterLock, type WriterLock } from "./writer-lock.js";

export type { AppendedRecord, FlagReply, Ledger, LedgerOptions } from "./ledger-api.js";
export type { RecordDraft } from "./record-draft.js";

const OWNER_ONLY_TYPES = new Set([
  RecordType.GENESIS,
  RecordType.STOP,
  RecordType.RESUME,
  RecordType.RECONCILE,
  RecordType.INTENT,
  RecordType.GATE,
  RecordType.REVIEW,
  RecordType.OUTCOME,
  RecordType.ARCHIVE,
]);

/**
 * Open the machine's ledger (§15). Never throws for the store's condition: a store that is
 * gone, unreadable or locked opens `unavailable`; a chain or head that does not check opens
 * `blocked` with the rule and the observation an owner can sign. On a clean open it rolls a
 * lagging head forward, writes `unknown` for every intent left without an outcome, and
 * records every flag raised while it could not (marked late), before it returns.
 */
export async function openLedger(options: LedgerOptions): Promise<Ledger> {
  const paths = ledgerPaths(options.dir, options.headPath);
  const clock = options.clock ?? (() => Date.now());
  const log = options.log ?? (() => undefined);
  const daemonKey = options.daemonSigner.publicKey;
  const ownerKey = publicKeyFromRaw(options.ownerPublicKey);
  const flags: Flags = createFlags({ dir: options.flagsDir, ownerKey });

  let store: LedgerStore | undefined;
  // The seq of a cut record just committed, whose records the next open drops before it walks (archive.ts).
  let dropCut: number | undefined;
  let archiving = false;
  // The store's writes run on a worker thread (store-writer.ts): an fsync never blocks the loop.
  let writer: StoreWriter | undefined;
  let writerClosing: Promise<void> = Promise.resolve();
  // True while a batch is on its way to the disk: the store may then already hold records
  // the daemon's tip does not name yet, so the early-warning store check waits.
  let committing = false;
  let lock: WriterLock | undefined;
  let state: LedgerState = { status: "unavailable", reason: "not opened yet" };
  let view: ViewProjector = createView();
  let tip: { seq: number; hash: Uint8Array } | undefined;
  let signedHead: Head | undefined;
  let lastReopen = Number.NEGATIVE_INFINITY;
  let reopening: Promise<LedgerState> | undefined;
  let recordingFlags: Promise<void> | undefined;
  let closed = false;
  const listeners = new Set<(entries: readonly LedgerEntry[]) => void>();

  const setState = (next: LedgerState) => {
    if (next.status !== state.status || (next.status !== "ready" && state.status !== "ready" && next.reason !== state.reason)) {
      log(next.status === "ready" ? "ledger ready" : `ledger ${next.status}: ${next.reason}`);
    }
    state = next;
  };

  const ctx: CommitContext = {
    signer: options.daemonSigner,
    clock,
    store: () => store,
    writer: () => writer,
    state: () => state,
    view: () => view,
    tip: () => tip,
    committed(newTip, head, records) {
      tip = newTip;
      signedHead = head;
      for (const r of records) view.apply(r);
      if (listeners.size > 0) {
        // Described from the records just built (decoded already), not from their bytes again.
        const entries = records.map((r) => describeRecord(r.seq, r.hash, r.header, r.payload));
        for (const l of listeners) l(entries);
      }
    },
    fail(status, refusal) {
      setState(
        status === "blocked"
          ? { status, rule: refusal.rule, reason: refusal.reason, seq: undefined, observation: observeNow(refusal) }
          : { status, reason: refusal.reason },
      );
    },
    writeHead: (head) => heads.request(head),
  };
  // The daemon writes its head files on a worker thread too (head-file-writer.ts).
  const headFiles = options.writeOnWorker ? createHeadFileWriter() : undefined;
  let heads = newHeadWriter(-1);
  function newHeadWriter(writtenSeq: number) {
    return createHeadWriter(
      (head) => writeHeadFile(paths.head, options.daemonSigner, head, headFiles),
      (error) => ctx.fail("unavailable", refuse("ledger.unavailable", `the signed head could not be written: ${describeError(error)}`)),
      writtenSeq,
    );
  }
  const commits = createGroupCommit<PendingRecord, AppendResult | LedgerRefusal>({
    commit: async (items) => {
      committing = true;
      try {
        return await commitBatch(ctx, items);
      } finally {
        committing = false;
      }
    },
  });

  /** The observation for a block found at append time (the store written behind the daemon). */
  function observeNow(refusal: Refusal): HeadObservation | undefined {
    let row;
    try {
      row = store?.tip();
    } catch {
      return undefined;
    }
    if (!row) return undefined;
    return {
      rule: refusal.rule,
      tipSeq: BigInt(row.seq),
      tipHash: headerHash(row.header),
      headSeq: BigInt(signedHead?.seq ?? 0),
      headHash: signedHead?.hash ?? new Uint8Array(0),
    };
  }

  /** Append as things stand: never reopens (recovery and late flags run inside a reopen). */
  async function commit(pending: PendingRecord): Promise<AppendedRecord> {
    if (closed) throw new LedgerRefusal("ledger.unavailable", "the ledger is closed");
    const result = await commits.submit(pending);
    if (result instanceof LedgerRefusal) throw result;
    await heads.covered(result.seq);
    return result;
  }

  /** Append for a caller: an unavailable store is given one chance to come back first. */
  async function enqueue(pending: PendingRecord): Promise<AppendedRecord> {
    if (state.status === "unavailable") await maybeReopen();
    return commit(pending);
  }

  function closeStore(): void {
    if (writer) {
      const closing = writer.close();
      writerClosing = writerClosing.then(() => closing);
      writer = undefined;
    }
    store?.close();
    store = undefined;
    lock?.release();
    lock = undefined;
  }

  async function openInternal(): Promise<LedgerState> {
    await commits.drain();
    await heads.drain();
    // Nothing commits while the store is re-read: an append now waits for this reopen.
    state = { status: "unavailable", reason: "the ledger is reopening" };
    closeStore();
    try {
      await mkdir(paths.dir, { recursive: true, mode: 0o700 });
      lock = acquireWriterLock(paths.lock);
      store = openStore(paths.db, { busyTimeoutMs: options.busyTimeoutMs });
      if (dropCut !== undefined) dropArchived(store, dropCut);
      if (options.writeOnWorker) {
        const opened = store;
        [writer] = await Promise.all([openStoreWriter(paths.db, { identity: opened.identity, busyTimeoutMs: options.busyTimeoutMs }), headFiles?.start()]);
      }
    } catch (error) {
      closeStore();
      setState({ status: "unavailable", reason: `cannot open the ledger store: ${describeError(error)}` });
      return state;
    }
    await cleanHeadTemps(paths.head).catch(() => undefined);
    const fileHead = await readHeadFile(paths.head, daemonKey);
    // The head this process last signed is newer than (or equal to) the file's.
    const trusted: HeadRead = signedHead ? { status: "ok", head: signedHead } : fileHead;
    const next = createView();
    let verdict;
    try {
      verdict = (await checkLedger({ reader: store, daemonKey, ownerKey, head: trusted, mode: "open", onRecord: next.apply })).verdict;
    } catch (error) {
      closeStore();
      setState({ status: "unavailable", reason: `cannot read the ledger store: ${describeError(error)}` });
      return state;
    }
    view = next;
    if (verdict.status === "blocked") {
      tip = undefined;
      setState({ status: "blocked", rule: verdict.rule, reason: verdict.reason, seq: verdict.seq, observation: verdict.observation });
      return state;
    }
    if (verdict.pendingDrop && verdict.cut) {
      // The cut was recorded but its records were not dropped (the daemon stopped in between):
      // the walk just checked them whole and the cut's hash against them; drop them now.
      dropCut = verdict.cut.seq;
      return openInternal();
    }
    tip = verdict.tip;
    signedHead = verdict.head;
    const fileCurrent = fileHead.status === "ok" && fileHead.head.seq === tip.seq && bytesEqual(fileHead.head.hash, tip.hash);
    if (!fileCurrent) {
      // A head lagging by a sealed suffix rolls forward by itself (§15).
      signedHead = { seq: tip.seq, hash: tip.hash, timeUnixMs: clock() };
      try {
        await writeHeadFile(paths.head, options.daemonSigner, signedHead);
      } catch (error) {
        setState({ status: "unavailable", reason: `the signed head could not be written: ${describeError(error)}` });
        return state;
      }
      if (verdict.headLag > 0) log(`ledger head rolled forward from ${verdict.head.seq} to ${tip.seq}`);
    }
    heads = newHeadWriter(tip.seq);
    setState({ status: "ready" });
    await recoverIntents({ view: () => view, store: () => store, running: (key) => dispatcher.inFlight(key), enqueue: commit, log });
    await recordPendingFlags();
    await removeClearedStopFlags();
    return state;
  }

  /** Archival's drop (archive.ts): the records a committed cut record moved out, before the view is rebuilt. */
  function dropArchived(opened: LedgerStore, cutRecordSeq: number): void {
    dropCut = undefined;
    const cut = findCut(opened);
    if (cut === undefined || cut.seq !== cutRecordSeq) return;
    const t0 = performance.now();
    const removed = opened.removeArchived(cut.cutSeq, [...cut.kept.keys()], true);
    if (removed > 0) log(`ledger archive: ${removed} record(s) before ${cut.cutSeq} dropped from the live store (${Math.round(performance.now() - t0)} ms)`);
  }

  function reopen(): Promise<LedgerState> {
    if (closed) return Promise.resolve(state);
    lastReopen = clock();
    reopening ??= openInternal().finally(() => {
      reopening = undefined;
    });
    return reopening;
  }

  async function maybeReopen(): Promise<void> {
    if (reopening) await reopening;
    else if (clock() - lastReopen >= (options.reopenIntervalMs ?? 1000)) await reopen();
  }

  function recordPendingFlags(): Promise<void> {
    recordingFlags ??= (async () => {
      const pending = flags.read().flags.filter((f: Flag) => view.flagRecorded(f.id) === undefined);
      const results = await Promise.allSettled(pending.map((f) => commit(flagRecord(f, true))));
      for (const r of results) if (r.status === "rejected") log(`a flag could not be recorded yet: ${describeError(r.reason)}`);
    })().finally(() => {
      recordingFlags = undefined;
    });
    return recordingFlags;
  }

  async function removeClearedStopFlags(): Promise<void> {
    const cleared = flags.read().flags.filter((f) => f.kind === "stop" && view.stopCleared(f.id));
    if (cleared.length > 0) await flags.remove(cleared.map((f) => f.id)).catch((e: unknown) => log(`cannot remove cleared stop flags: ${describeError(e)}`));
  }

  /** Is the store still the file the daemon opened, with the tip the daemon last signed? */
  // When the store was last checked against the daemon's tip. The check is an early warning
  // only: every commit re-checks the store before it writes (commit.ts), and no decision
  // reads the store (the view is the daemon's own), so at most every 50 ms is enough.
  let storeCheckedAt = Number.NEGATIVE_INFINITY;
  function checkStore(): void {
    if (state.status !== "ready" || !store || !tip || committing) return;
    const now = performance.now();
    if (now - storeCheckedAt < 50) return;
    storeCheckedAt = now;
    const gone = store.checkFile();
    if (gone) return ctx.fail("unavailable", refuse("ledger.unavailable", gone));
    try {
      const row = store.tip();
      if (!row || row.seq !== tip.seq || !bytesEqual(headerHash(row.header), tip.hash)) {
        ctx.fail("blocked", refuse("ledger.head-mismatch", `the store's tip is not the record ${tip.seq} the daemon last signed`));
      }
    } catch (error) {
      ctx.fail("unavailable", refuse("ledger.unavailable", `the store cannot be read: ${describeError(error)}`));
    }
  }

  function guard(team: string): Refusal | undefined {
    const read = flags.read();
    const bad = read.invalid[0];
    if (bad) return refuse("flag.unverifiable", `flag ${bad.file}: ${bad.reason}`);
    let unrecorded = false;
    let stopped: Flag | undefined;
    for (const flag of read.flags) {
      if (view.flagRecorded(flag.id) === undefined) unrecorded = true;
      // The machine's stop first: it is the stronger one, and says so.
      if (flag.kind === "stop" && !view.stopCleared(flag.id) && (flag.scope === "machine" || flag.team === team))
        stopped = stopped?.scope === "machine" ? stopped : flag;
    }
    if (unrecorded && state.status === "ready") void recordPendingFlags();
    // A machine stop is stop.active; a team's own stop is stop.team (§9: it never reaches another team).
    if (stopped)
      return stopped.scope === "machine"
        ? refuse("stop.active", `the owner stopped this machine (flag ${stopped.id.slice(0, 12)})`)
        : refuse("stop.team", `team ${stopped.team} is stopped (flag ${stopped.id.slice(0, 12)}) until an owner's teamd resume --team ${stopped.team}`);
    const recorded = view.activeStops().find((s) => s.scope === "machine") ?? view.activeStops().find((s) => s.team === team);
    if (recorded)
      return recorded.scope === "machine"
        ? refuse("stop.active", `the owner stopped this machine (record ${recorded.seq})`)
        : refuse("stop.team", `team ${recorded.team} is stopped (record ${recorded.seq}) until an owner's teamd resume --team ${recorded.team}`);
    checkStore();
    if (state.status === "unavailable") {
      void maybeReopen().catch(() => undefined);
      return refuse("ledger.unavailable", state.reason);
    }
    if (state.status === "blocked") return refuse(state.rule, state.reason);
    return undefined;
  }

  const dispatcher = createDispatcher({
    view: () => view,
    guard,
    append: (draft) => enqueue(daemonRecord(draft)),
  });

  const ownerActs = createOwnerActs({
    ownerKey,
    flags,
    view: () => view,
    state: () => state,
    enqueue,
    reopen,
    recordPendingFlags,
    maybeReopen,
  });

  const ledger: Ledger = {
    paths,
    get state() {
      return state;
    },
    get view() {
      return view;
    },
    get head() {
      return signedHead;
    },
    ownerKey,
    daemonKey,
    decisionCache: createDecisionCache(),
    guard,
    isRevoked(subject, subjectId) {
      const key = `${subject}:${subjectId}`;
      return view.revoked(key) !== undefined || flags.read().flags.some((f) => f.subject === key);
    },
    async append(draft) {
      if (OWNER_ONLY_TYPES.has(draft.type)) throw new Error(`a ${RecordType[draft.type]} record has its own entry point`);
      if (draft.signer?.kind === PrincipalKind.OWNER || draft.actor.kind === PrincipalKind.OWNER)
        throw LedgerRefusal.of(refuse("owner.signature", "an owner record needs the owner's signature (appendOwnerAct)"));
      return enqueue(daemonRecord(draft));
    },
    async appendBatch(drafts) {
      const [first, ...rest] = drafts;
      if (first === undefined) throw new Error("an empty batch");
      for (const draft of drafts) {
        if (OWNER_ONLY_TYPES.has(draft.type)) throw new Error(`a ${RecordType[draft.type]} record has its own entry point`);
        if (draft.signer?.kind === PrincipalKind.OWNER || draft.actor.kind === PrincipalKind.OWNER)
          throw LedgerRefusal.of(refuse("owner.signature", "an owner record needs the owner's signature (appendOwnerAct)"));
      }
      return enqueue({ ...daemonRecord(first), companions: rest.map(daemonRecord) });
    },
    async closeStart(intentSeq, draft) {
      // The one way to close a seat start's intent (its seat_start record): a gated act's
      // outcome is the dispatcher's alone, and recovery's for a dead daemon's.
      const open = view.intent(intentSeq);
      const detail = draft.payload.detail;
      if (open === undefined || !open.target.endsWith("#start") || open.status !== "pending") throw new Error(`intent ${intentSeq} is not an open seat start`);
      if (draft.type !== RecordType.OUTCOME || detail?.case !== "outcome" || detail.value.intentSeq !== BigInt(intentSeq))
        throw new Error(`a seat start's intent is closed by its own outcome record`);
      return enqueue({ ...daemonRecord(draft), once: { key: `outcome:${intentSeq}`, recorded: (v) => v.intent(intentSeq)?.outcomeSeq } });
    },
    appendOwnerAct: (act, companions, check) => ownerActs.append(act, (companions ?? []).map(daemonRecord), check),
    async leadsStop(team, leads, reason) {
      // §9: leads stops its own team. A stop record the leads seat signs (its socket), with no flag:
      // it needs the store (unlike the owner's, which holds by its flag), and holds from its record
      // — across restarts — until an owner's resume names it (its id: seq:N).
      const seat = { kind: PrincipalKind.SEAT, team, seat: leads };
      return enqueue(
        daemonRecord({
          type: RecordType.STOP,
          team,
          actor: seat,
          signer: seat,
          action: "stop.team",
          payload: {
            target: { kind: TargetKind.TEAM, name: team },
            detail: { case: "stop", value: { scope: StopScope.TEAM, team, reason, nonce: randomBytes(16) } },
          },
        }),
      );
    },
    async archive(act, archiveOptions) {
      // One archive at a time: a second would plan from the cut the first is about to move.
      if (archiving) throw new LedgerRefusal("ledger.unavailable", "an archive is in progress; try again when it is done");
      archiving = true;
      try {
        return await archiveLedger(
          {
            ownerKey,
            signer: options.daemonSigner,
            flags,
            clock,
            view: () => view,
            state: () => state,
            store: () => store,
            enqueue,
            async dropAndReopen(cutRecordSeq) {
              await reopening?.catch(() => undefined);
              dropCut = cutRecordSeq;
              return reopen();
            },
          },
          act,
          archiveOptions,
        );
      } finally {
        archiving = false;
      }
    },
    readFlags: () => flags.readFresh(),
    revocationFlags: () => flags.read().flags.flatMap((f) => (f.kind === "revocation" && f.subject !== undefined ? [f.subject] : [])),
    async submit(request, effect) {
      if (state.status === "unavailable") await maybeReopen();
      return dispatcher.submit(request, effect);
    },
    stop: ownerActs.stop,
    revoke: ownerActs.revoke,
    resume: ownerActs.resume,
    reconcile: ownerActs.reconcile,
    resolveUnknown: ownerActs.resolveUnknown,
    observation: () => (state.status === "blocked" ? state.observation : undefined),
    reopen,
    async verify(progress) {
      if (!store)
        return { ok: false, seq: undefined, rule: "ledger.unavailable", reason: state.status === "unavailable" ? state.reason : "no store", records: 0 };
      try {
        return await verifyStore({ reader: store, headPath: paths.head, daemonKey, ownerKey, progress });
      } catch (error) {
        // The store went away under a long verify (a reopen closed it): say so, never guess.
        return { ok: false, seq: undefined, rule: "ledger.unavailable", reason: `the store could not be read: ${describeError(error)}`, records: 0 };
      }
    },
    entries(fromSeq, limit, type) {
      if (!store) throw new LedgerRefusal("ledger.unavailable", state.status === "unavailable" ? state.reason : "no store");
      const rows = type === undefined ? store.records(fromSeq, limit) : store.recordsOfType(type, fromSeq, limit);
      return rows.map(describeStored);
    },
    onAppend(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    integrityCheck: () => store?.integrityCheck() ?? ["the ledger store is not open"],
    async close() {
      closed = true;
      await reopening?.catch(() => undefined);
      await recordingFlags?.catch(() => undefined);
      await commits.drain();
      await heads.drain();
      await headFiles?.close();
      // The writer's connection closes first, so the checkpoint folds the whole WAL back.
      const closing = writer?.close();
      writer = undefined;
      await closing;
      await writerClosing;
      try {
        store?.checkpoint();
      } catch {
        // A store that went away cannot be checkpointed; its WAL is replayed on the next open.
      }
      closeStore();
      setState({ status: "unavailable", reason: "the ledger is closed" });
    },
  };
  await reopen();
  return ledger;
}
