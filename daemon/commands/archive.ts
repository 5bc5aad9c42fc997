import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { OwnerActKind } from "../../src/gen/teamd/v1/control_pb.js";
import { archiveDraft, decodeHeader, decodePayload, findCut, signOwnerAct, toHex, toSafeNumber, type StoreReader } from "../../src/ledger/index.js";
import { UsageError } from "../../src/rpc/errors.js";
import { resolveHome } from "../host/home.js";
import { terminalText } from "../host/terminal-text.js";
import { openOwnerChannel } from "../owner/channel.js";
import { openLedgerReader, recordTime, sinceTime } from "./ledger-read.js";
import { ownerKeyForAct } from "./owner-session.js";
import { askYesNo } from "./prompt.js";
import type { Ambient } from "../host/ambient.js";

/** An archive of a long history takes its time in the daemon; the call waits this long for it. */
const ARCHIVE_DEADLINE_MS = 60 * 60 * 1000;

export interface ArchiveCommandOptions {
  readonly before?: string;
  readonly to?: string;
  readonly keep?: boolean;
  readonly yes?: boolean;
  readonly json?: boolean;
}

/** The first record at or after `time` (records are in time order: the daemon's clock at commit), or the tip + 1. */
function firstAtOrAfter(store: StoreReader, time: number): number {
  const tip = store.tip()?.seq ?? -1;
  let lo = 0;
  let hi = tip + 1;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    // Below an earlier cut only kept records remain: read the first one at or after mid.
    const [row] = store.records(mid, 1);
    const at = row === undefined ? Number.POSITIVE_INFINITY : toSafeNumber(decodeHeader(row.header).timeUnixMs, "time");
    if (at < time) lo = (row?.seq ?? mid) + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * `teamd ledger archive --before SEQ|DATE --to FILE`: the owner moves the records before a cut
 * out of the live store into a self-verifying archive file (§15 archival; docs/records.md
 * "Archival"). Signed by the owner; carried out by the daemon, or by this command with the
 * daemon down (user mode). Without --keep, a cut through a record the gate still reads is
 * refused (ledger.archive-needed), naming each record and the fix; with it, they stay in the
 * live store past the cut. `teamd verify --archive FILE` verifies both as one history.
 */
export async function archiveCommand(options: ArchiveCommandOptions, ambient: Ambient): Promise<void> {
  if (options.before === undefined || options.before === "")
    throw new UsageError("say where to cut: --before SEQ (a record seq) or --before DATE (30d, or 2026-11-01T00:00:00Z)");
  if (options.to === undefined || options.to === "") throw new UsageError("say where the archive goes: --to FILE (a new file)");
  const file = resolve(options.to);
  if (existsSync(file)) throw new UsageError(`${file} exists already; an archive never replaces a file (choose another name)`);
  if (!existsSync(dirname(file))) throw new UsageError(`the directory ${dirname(file)} does not exist`);
  const store = openLedgerReader();
  let beforeSeq: number;
  let from: number;
  let tip: number;
  try {
    tip = store.tip()?.seq ?? -1;
    from = findCut(store)?.cutSeq ?? 0;
    if (/^\d{1,15}$/.test(options.before)) beforeSeq = Number(options.before);
    else beforeSeq = firstAtOrAfter(store, sinceTime(options.before, ambient.now()));
    const [last] = beforeSeq > 0 ? store.records(beforeSeq - 1, 1) : [];
    const when = last && last.seq < beforeSeq ? ` (the last at ${recordTime(toSafeNumber(decodeHeader(last.header).timeUnixMs, "time"))})` : "";
    if (!options.json)
      process.stderr.write(
        terminalText(`archiving the records from ${from} to before ${Math.min(beforeSeq, tip + 1)}${when} into ${file}; the live store ends at ${tip}`) + "\n",
      );
  } finally {
    store.close();
  }
  if (beforeSeq <= Math.max(from, 1)) throw new UsageError(`nothing to archive before record ${beforeSeq}: the live store's history starts at ${from}`);
  if (!options.yes && !(await askYesNo(`Move these records out of the live store into ${file} (this is recorded, signed by you)?`)))
    throw new Error("cancelled; nothing was changed");
  const key = await ownerKeyForAct();
  const act = await signOwnerAct(archiveDraft({ beforeSeq, file, keep: options.keep === true }), key.seed);
  const channel = await openOwnerChannel(resolveHome(), ambient.now, { deadlineMs: ARCHIVE_DEADLINE_MS });
  let seq: number;
  try {
    if (!options.json && channel.via === "daemon") process.stderr.write("the daemon is archiving (its log shows the progress)…\n");
    const receipt = await channel.submit(OwnerActKind.ARCHIVE, act, options.json ? undefined : (line) => process.stderr.write(`archive: ${line}\n`));
    seq = receipt.seq;
  } finally {
    await channel.close();
  }
  const after = openLedgerReader();
  try {
    const cut = findCut(after);
    const row = cut && after.record(cut.seq);
    const detail = row?.payload ? decodePayload(row.payload).detail : undefined;
    const archive = detail?.case === "archive" ? detail.value : undefined;
    const kept = (archive?.kept ?? []).map((k) => ({ seq: Number(k.seq), why: k.why }));
    const result = {
      seq,
      cutSeq: cut?.cutSeq ?? 0,
      fromSeq: cut?.fromSeq ?? 0,
      archived: Number(archive?.archived ?? 0n),
      kept,
      file: cut?.file ?? file,
      fileDigest: cut ? toHex(cut.fileDigest) : "",
      liveRecords: after.count(),
    };
    if (options.json) {
      process.stdout.write(JSON.stringify(result) + "\n");
      return;
    }
    process.stdout.write(
      `archived ${result.archived} record(s) from ${result.fromSeq} to ${result.cutSeq - 1} into ${result.file} (sha256 ${result.fileDigest.slice(0, 16)}…): record ${seq}\n`,
    );
    if (kept.length > 0) {
      process.stdout.write(`${kept.length} record(s) before the cut stay in the live store, the gate still reads them:\n`);
      for (const k of kept.slice(0, 20)) process.stdout.write(terminalText(`  ${k.seq}: ${k.why}`) + "\n");
      if (kept.length > 20) process.stdout.write(`  … and ${kept.length - 20} more (--json lists them)\n`);
    }
    process.stdout.write(`the live store holds ${result.liveRecords} record(s); verify both as one history: teamd verify --archive ${result.file}\n`);
  } finally {
    after.close();
  }
}
