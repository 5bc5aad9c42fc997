import { UsageError } from "../../src/rpc/errors.js";
import { OwnerActKind } from "../../src/gen/teamd/v1/control_pb.js";
import { describeStored, signOwnerAct, tombstoneDraft } from "../../src/ledger/index.js";
import { utf8Bytes } from "../../src/ledger/bounded-text.js";
import { resolveHome } from "../host/home.js";
import { openOwnerChannel } from "../owner/channel.js";
import { ownerKeyForAct } from "./owner-session.js";
import { askYesNo } from "./prompt.js";
import { openLedgerReader } from "./ledger-read.js";
import { terminalText } from "../host/terminal-text.js";
import type { Ambient } from "../host/ambient.js";

/** A tombstone's reason is read by people in `teamd log`: one line, bounded. */
const MAX_REASON_BYTES = 1024;

/**
 * `teamd ledger tombstone SEQ --reason TEXT`: the owner hides one record's content (§15:
 * deletion is a signed tombstone). The record's header stays in the chain (verify still
 * passes); `teamd log` shows its stub and the tombstone's reason; an archive leaves its
 * payload out. The daemon refuses a record the gate still reads in full
 * (`ledger.tombstone-kept`: docs/records.md lists which may be hidden).
 */
export async function tombstoneCommand(seqText: string, options: { reason?: string; yes?: boolean; json?: boolean }, ambient: Ambient): Promise<void> {
  if (!/^\d{1,15}$/.test(seqText) || Number(seqText) < 1) throw new UsageError(`'${seqText}' is not a record seq (teamd log shows them)`);
  const reason = options.reason ?? "";
  if (reason.trim() === "") throw new UsageError("say why: --reason TEXT (it is recorded, signed by you, and shown in place of the record)");
  if (utf8Bytes(reason) > MAX_REASON_BYTES || /[\u0000-\u001f\u007f]/.test(reason))
    throw new UsageError(`--reason is one line of at most ${MAX_REASON_BYTES} bytes`);
  const seq = Number(seqText);
  const store = openLedgerReader();
  let subject;
  try {
    const row = store.record(seq);
    if (row === undefined) throw new UsageError(`the ledger has no record ${seq}`);
    const entry = describeStored(row);
    if (entry.header === undefined) throw new Error(`record ${seq} cannot be read: ${entry.error ?? "no header"}`);
    subject = { seq, header: entry.header, payload: entry.payload, payloadDigest: entry.header.payloadDigest };
    if (!options.json)
      process.stderr.write(
        terminalText(`record ${seq}: ${entry.type} ${entry.action} ${entry.target || "-"} (team ${entry.team || "-"}, ${entry.actor})`) + "\n",
      );
  } finally {
    store.close();
  }
  if (!options.yes && !(await askYesNo(`Hide record ${seq}'s content behind a tombstone (this is recorded, signed by you)?`)))
    throw new Error("cancelled; nothing was changed");
  const key = await ownerKeyForAct();
  const act = await signOwnerAct(tombstoneDraft({ subject, reason }), key.seed);
  const channel = await openOwnerChannel(resolveHome(), ambient.now);
  try {
    const receipt = await channel.submit(OwnerActKind.TOMBSTONE, act);
    if (options.json) process.stdout.write(JSON.stringify({ tombstoned: seq, seq: receipt.seq }) + "\n");
    else process.stdout.write(`record ${seq} tombstoned: record ${receipt.seq}\n`);
  } finally {
    await channel.close();
  }
}
