import { startWorkerCalls, type WorkerCalls } from "./worker-calls.js";
import { tempPathFor } from "./atomic-file.js";

/**
 * The signed head's file writes on a worker thread, as one synchronous sequence there: the
 * same atomic replacement as writeFileAtomic (a fresh temp beside the head, fsync, rename over
 * it, fsync the directory), without its eight hops through the daemon's event loop. Every
 * gated request waits for two head writes (its intent's and its outcome's, ledger.ts); on a
 * busy loop each hop waited behind the requests being decided, and the head write, not the
 * disk, set the pace. Same names, same temp cleanup (removeStaleTemps), same failure: an
 * error rejects the write, and the ledger turns unavailable.
 */
export interface HeadFileWriter {
  /** Have a live worker (started at the ledger's open, so the first write does not wait for it). */
  start(): Promise<void>;
  write(path: string, bytes: Uint8Array): Promise<void>;
  close(): Promise<void>;
}

const WORKER_SOURCE = `
const { parentPort } = require("node:worker_threads");
const fs = require("node:fs");
const { dirname } = require("node:path");
parentPort.postMessage({ id: 0 });
parentPort.on("message", (m) => {
  if (m.close) {
    parentPort.close();
    return;
  }
  let fd;
  try {
    fd = fs.openSync(m.temp, "wx", 0o600);
    let at = 0;
    while (at < m.bytes.byteLength) at += fs.writeSync(fd, m.bytes, at);
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    fd = undefined;
    fs.renameSync(m.temp, m.path);
    const dir = fs.openSync(dirname(m.path), "r");
    try {
      fs.fsyncSync(dir);
    } finally {
      fs.closeSync(dir);
    }
    parentPort.postMessage({ id: m.id });
  } catch (error) {
    if (fd !== undefined) try { fs.closeSync(fd); } catch {}
    try { fs.unlinkSync(m.temp); } catch {}
    parentPort.postMessage({ id: m.id, error: String((error && error.message) || error) });
  }
});
`;

/** A head-file writer whose worker starts on first use and again after one died. */
export function createHeadFileWriter(): HeadFileWriter {
  let started: Promise<WorkerCalls> | undefined;
  const calls = async (): Promise<WorkerCalls> => {
    const current = started && (await started.catch(() => undefined));
    if (current && !current.dead) return current;
    started = startWorkerCalls(WORKER_SOURCE, undefined, "head file writer").then((s) => s.calls);
    return started;
  };
  return {
    async start() {
      await calls();
    },
    async write(path, bytes) {
      await (await calls()).call({ path, temp: tempPathFor(path), bytes });
    },
    async close() {
      const current = started && (await started.catch(() => undefined));
      started = undefined;
      await current?.close();
    },
  };
}
