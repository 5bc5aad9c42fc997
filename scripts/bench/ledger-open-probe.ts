import { join } from "node:path";
import { createDaemonSigner, fromHex, openLedger } from "../../src/ledger/index.js";

/**
 * One ledger open in a fresh process (ledger-archive.ts runs it): how long `openLedger` takes
 * (the walk of the live store and the view it rebuilds) and the process's resident memory and
 * heap once it is open, after a full GC — the daemon's cost of its history. Prints one JSON line.
 * Arguments: the bench's root, the daemon's seed (hex), the owner's public key (hex).
 */
const [root, seedHex, ownerHex] = process.argv.slice(2);
if (root === undefined || seedHex === undefined || ownerHex === undefined) throw new Error("usage: ledger-open-probe ROOT DAEMON_SEED OWNER_PUBLIC");
const gc = (globalThis as { gc?: () => void }).gc;
gc?.();
const base = process.memoryUsage();
const t0 = performance.now();
const ledger = await openLedger({
  dir: join(root, "ledger"),
  flagsDir: join(root, "flags"),
  daemonSigner: createDaemonSigner(fromHex(seedHex)),
  ownerPublicKey: fromHex(ownerHex),
});
const openMs = performance.now() - t0;
gc?.();
const mem = process.memoryUsage();
const result = {
  status: ledger.state.status,
  openMs,
  rssBytes: mem.rss,
  heapBytes: mem.heapUsed,
  baseRssBytes: base.rss,
  baseHeapBytes: base.heapUsed,
  lastSeq: ledger.view.lastSeq,
};
await ledger.close();
process.stdout.write(JSON.stringify(result) + "\n");
