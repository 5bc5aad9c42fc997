import { resolve } from "node:path";
import { verifyLedgerFiles } from "../../src/ledger/index.js";
import { EXIT } from "../../src/rpc/cli-outcome.js";
import { RULES } from "../../src/kernel/rules.js";
import { resolveHome } from "../host/home.js";
import { ledgerExists, ledgerLayout, readHexKey, readPinnedOwnerKey } from "../host/ledger-host.js";

/**
 * `teamd verify`: walk the chain, check every signature and seal and the signed head,
 * read-only. Exits non-zero naming the first bad seq and why. A progress bar on a terminal.
 * After an archive the live store verifies alone against its cut; with `--archive FILE` (each
 * archive, oldest first or not) the archives and the live store verify as one history.
 */
export async function verify(options: { json?: boolean; archive?: readonly string[] }): Promise<void> {
  const layout = ledgerLayout(resolveHome());
  if (!ledgerExists(layout)) throw new Error(`no ledger at ${layout.db}: run teamd init`);
  const ownerPublicKey = readPinnedOwnerKey(layout);
  const daemonPublicKey = readHexKey(layout.daemonPublicKey);
  if (!ownerPublicKey || !daemonPublicKey) throw new Error(`the pinned keys in ${layout.keysDir} are missing: run teamd init (or teamd serve) again`);
  const tty = !options.json && process.stderr.isTTY;
  let last = 0;
  const result = await verifyLedgerFiles({
    dir: layout.dir,
    ownerPublicKey,
    daemonPublicKey,
    archives: (options.archive ?? []).map((file) => resolve(file)),
    progress: (done, total) => {
      if (!tty || (done !== total && done - last < 1000)) return;
      last = done;
      const width = 30;
      const filled = total === 0 ? width : Math.round((done / total) * width);
      process.stderr.write(`\rverifying [${"#".repeat(filled)}${" ".repeat(width - filled)}] ${done}/${total}`);
    },
  });
  if (tty) process.stderr.write("\n");
  if (options.json) process.stdout.write(JSON.stringify(result) + "\n");
  else if (result.ok) {
    const lag = result.headLag > 0 ? `; head lags by ${result.headLag} sealed record(s) and rolls forward on the next open` : "";
    const acked = result.acknowledged.length > 0 ? `; ${result.acknowledged.length} damaged range(s) accepted by owner reconciliation` : "";
    process.stdout.write(
      `ok: ${result.records} records, ${result.seals} seals, head at ${result.head.seq} (${result.head.hash.slice(0, 16)}…)${lag}${acked}\n`,
    );
    if (result.archives !== undefined)
      process.stdout.write(
        `the whole history from genesis: ${result.archives.map((a) => `${a.file} (${a.fromSeq}..${a.cutSeq - 1})`).join(", ")} and the live store\n`,
      );
    else if (result.cut !== undefined)
      process.stdout.write(
        `the live store starts at the archive cut ${result.cut.cutSeq} (record ${result.cut.seq}; ${result.cut.kept} kept record(s) below it, checked against the cut); the history before it: teamd verify --archive ${result.cut.file}\n`,
      );
  } else {
    process.stderr.write(
      `verify failed${result.seq !== undefined ? ` at seq ${result.seq}` : ""}: ${result.rule} (${RULES[result.rule].section}): ${result.reason} (${result.records} records verified before it)\n`,
    );
  }
  if (!result.ok) process.exitCode = EXIT.failure;
}
