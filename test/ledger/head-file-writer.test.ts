import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { RecordType } from "../../src/gen/teamd/v1/ledger_pb.js";
import { daemonPrincipal } from "../../src/ledger/codec.js";
import { createHeadFileWriter, type HeadFileWriter } from "../../src/ledger/head-file-writer.js";
import { readHeadFile } from "../../src/ledger/head-file.js";
import { initEnv, type TestEnv } from "./helpers.js";

/**
 * The daemon writes its signed head on a worker thread (head-file-writer.ts). Real files:
 * the head is replaced whole, owner-only, with no temp left behind — also when a write fails
 * — and the ledger opened with writeOnWorker keeps its head current through it.
 */
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function fresh(): { dir: string; writer: HeadFileWriter } {
  const dir = mkdtempSync(join(tmpdir(), "teamd-headw-"));
  const writer = createHeadFileWriter();
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  cleanups.push(() => writer.close());
  return { dir, writer };
}

describe("head file writer: atomic replacement on a worker thread", () => {
  it("replaces the file whole, mode 0600, and leaves no temp", async () => {
    const { dir, writer } = fresh();
    const path = join(dir, "head");
    writeFileSync(path, "old");
    for (let i = 0; i < 5; i++) await writer.write(path, new TextEncoder().encode(`head ${i} `.repeat(50)));
    expect(readFileSync(path, "utf8")).toBe("head 4 ".repeat(50));
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(["head"]);
  });

  it("a write that cannot complete rejects, keeps the old head, and leaves no temp; the next write works", async () => {
    const { dir, writer } = fresh();
    const path = join(dir, "head");
    writeFileSync(path, "old");
    // The rename fails: the target is now a non-empty directory.
    rmSync(path);
    mkdirSync(path);
    writeFileSync(join(path, "inside"), "x");
    await expect(writer.write(path, new Uint8Array([1, 2, 3]))).rejects.toThrow(/EISDIR|ENOTEMPTY|EEXIST/);
    expect(readdirSync(dir)).toEqual(["head"]);
    rmSync(path, { recursive: true });
    await writer.write(path, new Uint8Array([4, 5]));
    expect([...readFileSync(path)]).toEqual([4, 5]);
  });

  it("refuses in a folder it cannot write (no temp is created), as the event-loop writer does", async () => {
    if (process.getuid?.() === 0) return; // root writes through 0500
    const { dir, writer } = fresh();
    const locked = join(dir, "locked");
    mkdirSync(locked);
    chmodSync(locked, 0o500);
    cleanups.push(() => chmodSync(locked, 0o700));
    await expect(writer.write(join(locked, "head"), new Uint8Array([1]))).rejects.toThrow(/EACCES/);
  });

  it("a daemon ledger (writeOnWorker) keeps its signed head naming its tip through the worker", async () => {
    const made = await initEnv("headw", { writeOnWorker: true });
    const env: TestEnv = made.env;
    const ledger = made.ledger;
    cleanups.push(() => env.cleanup());
    cleanups.push(() => ledger.close());
    const appended = await Promise.all(
      Array.from({ length: 20 }, () => ledger.append({ type: RecordType.CHECKPOINT, actor: daemonPrincipal(), action: "checkpoint", payload: {} })),
    );
    const last = Math.max(...appended.map((a) => a.seq));
    // Every append is answered only once a head naming it is durable: the file already says so.
    const read = await readHeadFile(ledger.paths.head, env.signer.publicKey);
    expect(read.status).toBe("ok");
    expect(read.status === "ok" && read.head.seq).toBe(last);
    expect(readdirSync(join(ledger.paths.head, "..")).filter((n) => n.endsWith(".tmp"))).toEqual([]);
  });
});
