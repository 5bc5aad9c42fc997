import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { createGroupCommit } from "../../src/ledger/group-commit.js";
import { openStore } from "../../src/ledger/store.js";
import { acquireWriterLock } from "../../src/ledger/writer-lock.js";

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});
const tmp = () => (dir = mkdtempSync(join(tmpdir(), "teamd-store-")));

describe("store: append-only SQLite", () => {
  it("runs WAL with synchronous=FULL and refuses raw UPDATE and DELETE on records and seals", () => {
    const path = join(tmp(), "ledger.db");
    const store = openStore(path, { create: true });
    store.appendBatch([{ seq: 0, type: 1, header: new Uint8Array([1]), payload: new Uint8Array([2]) }], { seq: 0, body: new Uint8Array([3]) });
    store.close();
    const raw = new Database(path);
    try {
      expect(raw.pragma("journal_mode", { simple: true })).toBe("wal");
      expect(() => raw.prepare("UPDATE records SET header = x'00' WHERE seq = 0").run()).toThrow(/append-only: UPDATE refused/);
      expect(() => raw.prepare("DELETE FROM records WHERE seq = 0").run()).toThrow(/append-only: DELETE refused/);
      expect(() => raw.prepare("UPDATE seals SET body = x'00'").run()).toThrow(/append-only: UPDATE refused/);
      expect(() => raw.prepare("DELETE FROM seals").run()).toThrow(/append-only: DELETE refused/);
      // REPLACE deletes without firing DELETE triggers: its own trigger refuses it.
      expect(() => raw.prepare("INSERT OR REPLACE INTO records (seq, type, header) VALUES (0, 1, x'09')").run()).toThrow(/append-only: REPLACE refused/);
      expect(() => raw.prepare("REPLACE INTO seals (seq, body) VALUES (0, x'09')").run()).toThrow(/append-only: REPLACE refused/);
      expect(() =>
        raw.prepare("INSERT INTO records (seq, type, header) VALUES (0, 1, x'09') ON CONFLICT(seq) DO UPDATE SET header = excluded.header").run(),
      ).toThrow(/append-only/);
      expect(raw.prepare("SELECT count(*) AS n FROM records").get()).toEqual({ n: 1 });
    } finally {
      raw.close();
    }
    // The API offers no way to change a row: no update, and one deletion only — archival's, of
    // what a committed cut record names (every walk checks the store against it: archive.test.ts).
    const reopened = openStore(path);
    try {
      expect(reopened.settings()).toEqual({ journalMode: "wal", synchronous: "full" });
      expect(Object.keys(reopened).filter((k) => /update|delete|remove|replace|truncate/i.test(k))).toEqual(["removeArchived"]);
      expect(reopened.records(0, 10)[0]?.header).toEqual(new Uint8Array([1]));
      expect(reopened.integrityCheck()).toEqual(["ok"]);
    } finally {
      reopened.close();
    }
  });

  it("a missing database is an error unless creating; triggers come back on open", () => {
    const path = join(tmp(), "ledger.db");
    expect(() => openStore(path)).toThrow(/no ledger database/);
    const created = openStore(path, { create: true });
    created.appendBatch([{ seq: 0, type: 1, header: new Uint8Array([1]), payload: null }], { seq: 0, body: new Uint8Array([3]) });
    created.close();
    const raw = new Database(path);
    raw.exec("DROP TRIGGER records_append_only_delete");
    raw.close();
    openStore(path).close();
    const again = new Database(path);
    expect(() => again.prepare("DELETE FROM records").run()).toThrow(/append-only/);
    expect(again.prepare("SELECT count(*) AS n FROM records").get()).toEqual({ n: 1 });
    again.close();
  });

  it("one writer: a second process cannot take the writer lock until the first dies", async () => {
    const lockPath = join(tmp(), "ledger.lock");
    const child = spawn(
      process.execPath,
      [
        "-e",
        `
      const Database = require(${JSON.stringify(require.resolve("better-sqlite3"))});
      const db = new Database(${JSON.stringify(lockPath)});
      db.pragma("locking_mode = EXCLUSIVE"); db.exec("CREATE TABLE IF NOT EXISTS writer (pid INTEGER)");
      db.exec("BEGIN EXCLUSIVE"); db.exec("COMMIT"); console.log("locked"); setInterval(() => {}, 1000);
    `,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on("data", (d: Buffer) => d.toString().includes("locked") && resolve());
        child.on("exit", (code) => reject(new Error(`child exited ${code}`)));
      });
      expect(() => acquireWriterLock(lockPath)).toThrow(/another process is writing this ledger/);
    } finally {
      child.kill("SIGKILL");
      await new Promise((r) => child.once("exit", r));
    }
    const lock = acquireWriterLock(lockPath);
    lock.release();
  });
});

describe("group commit", () => {
  it("batches every submit made while a commit runs into the next single commit, in order", async () => {
    const batches: number[][] = [];
    let release: (() => void) | undefined;
    const gc = createGroupCommit<number, string>({
      commit: async (items) => {
        batches.push([...items]);
        if (batches.length === 1) await new Promise<void>((r) => (release = r));
        return items.map((i) => `ok${i}`);
      },
    });
    const first = gc.submit(0);
    await new Promise((r) => setImmediate(r));
    // The first commit is in progress: these wait for the next one, together.
    const rest = [1, 2, 3, 4].map((i) => gc.submit(i));
    let settled = false;
    void Promise.all(rest).then(() => (settled = true));
    await new Promise((r) => setTimeout(r, 10));
    expect(settled).toBe(false);
    release?.();
    expect(await first).toBe("ok0");
    expect(await Promise.all(rest)).toEqual(["ok1", "ok2", "ok3", "ok4"]);
    expect(batches).toEqual([[0], [1, 2, 3, 4]]);
  });

  it("a failed commit rejects exactly its batch; the next batch still runs", async () => {
    let n = 0;
    const gc = createGroupCommit<number, number>({
      commit: async (items) => {
        if (n++ === 0) throw new Error("disk full");
        return items.map((i) => i * 2);
      },
    });
    const a = gc.submit(1);
    await expect(a).rejects.toThrow("disk full");
    expect(await gc.submit(2)).toBe(4);
    await gc.drain();
  });
});
