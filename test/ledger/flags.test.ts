import { spawn, type ChildProcess } from "node:child_process";
import { copyFileSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { RecordType, RevocationSubject } from "../../src/gen/teamd/v1/ledger_pb.js";
import { daemonPrincipal } from "../../src/ledger/codec.js";
import {
  createFlags,
  headReconcileDraft,
  publicKeyFromRaw,
  resumeDraft,
  revocationDraft,
  signOwnerAct,
  stopDraft,
  type Ledger,
} from "../../src/ledger/index.js";
import { initEnv, request, seedOf, type TestEnv } from "./helpers.js";

let env: TestEnv | undefined;
let ledger: Ledger | undefined;
let child: ChildProcess | undefined;
afterEach(async () => {
  if (child && child.exitCode === null && child.signalCode === null) {
    child.kill("SIGKILL");
    await new Promise((r) => child?.once("exit", r));
  }
  child = undefined;
  await ledger?.close();
  env?.cleanup();
  env = undefined;
  ledger = undefined;
});

async function setup(label: string): Promise<{ e: TestEnv; l: Ledger }> {
  const made = await initEnv(label, { busyTimeoutMs: 20, log: process.env.LEDGER_DEBUG ? (x) => console.log("LOG", x) : undefined });
  env = made.env;
  ledger = made.ledger;
  return { e: made.env, l: made.ledger };
}

const notice = (l: Ledger) => l.append({ type: RecordType.NOTICE, actor: daemonPrincipal(), action: "notice", payload: {} });
const stopAct = (e: TestEnv, team?: string) => signOwnerAct(stopDraft({ team, reason: "owner said stop" }), e.ownerSeed);
const lateStops = (l: Ledger) => l.view.activeStops().filter((s) => s.late);

/** Take the database away (with its WAL and index, as a lost disk would), returning a function that brings it back. */
function removeDb(l: Ledger): () => void {
  const moved: [string, string][] = [];
  for (const suffix of ["", "-wal", "-shm"]) {
    try {
      renameSync(`${l.paths.db}${suffix}`, `${l.paths.db}${suffix}.away`);
      moved.push([`${l.paths.db}${suffix}.away`, `${l.paths.db}${suffix}`]);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
  }
  return () => {
    for (const [from, to] of moved) renameSync(from, to);
  };
}

async function closedAndRemoved(e: TestEnv, l: Ledger): Promise<() => void> {
  await l.close();
  return removeDb(l);
}

describe("flags: stop and revocation without the store", () => {
  it("a stop takes effect at once, is recorded (not late), and only an owner resume clears it", async () => {
    const { e, l } = await setup("stop");
    expect(l.guard("alpha")).toBeUndefined();
    const reply = await l.stop(await stopAct(e, "alpha"));
    expect(reply.recorded).toBeDefined();
    expect(l.guard("alpha")).toMatchObject({ rule: "stop.team" });
    expect(l.guard("beta")).toBeUndefined();
    await expect(l.submit(request("dev", "r1"), async () => ({ result: "done" }))).rejects.toMatchObject({ rule: "stop.team" });
    expect(l.view.activeStops()).toMatchObject([{ flagId: reply.flagId, scope: "team", team: "alpha", late: false }]);
    // A resume naming no active stop is refused; a replayed stop is not recorded twice.
    await expect(l.resume(await signOwnerAct(resumeDraft({ flagIds: ["00".repeat(32)] }), e.ownerSeed))).rejects.toMatchObject({ rule: "owner.act-invalid" });
    const resumed = await l.resume(await signOwnerAct(resumeDraft({ team: "alpha", flagIds: [reply.flagId] }), e.ownerSeed));
    expect(l.guard("alpha")).toBeUndefined();
    expect(readdirSync(e.flagsDir)).toEqual([]);
    expect(l.entries(resumed.seq, 1)[0]).toMatchObject({ type: "resume", signer: "owner" });
    expect(await l.submit(request("dev", "r1"), async () => ({ result: "done" }))).toMatchObject({ status: "done" });
  });

  it("the directory is read once per event-loop turn: another writer's flag counts from the next turn, one raised here at once", async () => {
    const { e, l } = await setup("turn");
    const other = createFlags({ dir: e.flagsDir, ownerKey: publicKeyFromRaw(e.ownerPublic) });
    const mine = createFlags({ dir: e.flagsDir, ownerKey: publicKeyFromRaw(e.ownerPublic) });
    const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
    const betaStop = await stopAct(e, "beta");
    const alphaStop = await stopAct(e, "alpha");
    await nextTurn();
    expect(mine.read().flags).toEqual([]);
    await other.raise(betaStop); // another writer, as another process would be for `mine`
    const first = mine.read();
    writeFileSync(join(e.flagsDir, "stop-deadbeef.flag"), "junk");
    expect(mine.read()).toBe(first); // the same turn: the same read
    // What the stop watch and status use reads now (the watch acts on a change it saw itself).
    expect(mine.readFresh().invalid.map((i) => i.file)).toEqual(["stop-deadbeef.flag"]);
    expect(l.readFlags().invalid.map((i) => i.file)).toEqual(["stop-deadbeef.flag"]);
    await nextTurn();
    expect(mine.read().invalid.map((i) => i.file)).toEqual(["stop-deadbeef.flag"]);
    rmSync(join(e.flagsDir, "stop-deadbeef.flag"));
    await nextTurn();
    expect(mine.read().flags.map((f) => f.team)).toEqual(["beta"]);
    // Raised through this instance: counted at once, in the same turn.
    const before = mine.read();
    const raised = await mine.raise(alphaStop);
    expect(mine.read()).not.toBe(before);
    expect(mine.read().flags.map((f) => f.id)).toContain(raised.id);
    await mine.remove([raised.id]);
    expect(mine.read().flags.map((f) => f.team)).toEqual(["beta"]);
    expect(l.guard("beta")).toMatchObject({ rule: "stop.team" });
  });

  it("several stops and revocations coexist as separate files; a machine stop holds every team; bad flags fail closed", async () => {
    const { e, l } = await setup("many");
    const flags = createFlags({ dir: e.flagsDir, ownerKey: publicKeyFromRaw(e.ownerPublic) });
    const acts = [
      await stopAct(e, "alpha"),
      await stopAct(e, "beta"),
      await signOwnerAct(revocationDraft({ team: "alpha", subject: RevocationSubject.LEASE, subjectId: "lease-1", reason: "leaked" }), e.ownerSeed),
      await signOwnerAct(revocationDraft({ team: "alpha", subject: RevocationSubject.LEASE, subjectId: "lease-2", reason: "done" }), e.ownerSeed),
    ];
    for (const act of acts) await flags.raise(act);
    await flags.raise(acts[0]!); // the same act again: the same file, nothing overwritten
    expect(readdirSync(e.flagsDir).filter((n) => n.endsWith(".flag"))).toHaveLength(4);
    expect(
      flags
        .read()
        .flags.map((f) => f.kind)
        .sort(),
    ).toEqual(["revocation", "revocation", "stop", "stop"]);
    expect(l.guard("gamma")).toBeUndefined();
    expect(l.guard("beta")).toMatchObject({ rule: "stop.team" });
    expect(l.isRevoked(RevocationSubject.LEASE, "lease-1")).toBe(true);
    expect(l.isRevoked(RevocationSubject.LEASE, "lease-3")).toBe(false);
    await l.stop(await stopAct(e));
    expect(l.guard("gamma")).toMatchObject({ rule: "stop.active", reason: expect.stringMatching(/this machine/) });
    // Flags the CLI wrote while the daemon ran are recorded by the daemon (late: it learned of them after they took effect).
    await new Promise((r) => setTimeout(r, 50));
    expect(
      l
        .entries(0, 100)
        .filter((x) => x.type === "stop" || x.type === "revocation")
        .map((x) => x.late)
        .sort(),
    ).toEqual([false, true, true, true, true]);
    // An unverifiable flag file: everything is refused.
    writeFileSync(join(e.flagsDir, "stop-deadbeef.flag"), "junk");
    expect(l.guard("gamma")).toMatchObject({ rule: "flag.unverifiable" });
    rmSync(join(e.flagsDir, "stop-deadbeef.flag"));
    await expect(flags.raise(await signOwnerAct(stopDraft({ reason: "x" }), seedOf("mallory")))).rejects.toMatchObject({ rule: "owner.signature" });
    const byOther = await signOwnerAct(stopDraft({ reason: "x" }), seedOf("mallory"));
    writeFileSync(join(e.flagsDir, "stop-0000.flag"), byOther);
    expect(l.guard("gamma")).toMatchObject({ rule: "flag.unverifiable" });
  });
});

describe("store down: a signed stop still takes effect, acts are refused, the stop is appended late and holds", () => {
  it("database removed", async () => {
    const { e, l } = await setup("removed");
    await notice(l);
    const putBack = removeDb(l);
    await expect(notice(l)).rejects.toMatchObject({ rule: "ledger.unavailable" });
    expect(l.state.status).toBe("unavailable");
    expect(l.guard("alpha")).toMatchObject({ rule: "ledger.unavailable" });
    const stopped = await l.stop(await stopAct(e, "alpha"));
    expect(stopped).toMatchObject({ recorded: undefined, reason: expect.stringMatching(/ledger.unavailable/) });
    expect(l.guard("alpha")).toMatchObject({ rule: "stop.team" });
    await expect(l.submit(request("dev", "r"), async () => ({ result: "done" }))).rejects.toMatchObject({ rule: "stop.team" });
    expect(l.guard("beta")).toMatchObject({ rule: "ledger.unavailable" });
    await expect(l.submit(request("dev", "r", "x", "beta"), async () => ({ result: "done" }))).rejects.toMatchObject({ rule: "ledger.unavailable" });
    putBack();
    expect(await l.reopen()).toEqual({ status: "ready" });
    expect(lateStops(l)).toMatchObject([{ flagId: stopped.flagId, late: true }]);
    expect(l.guard("alpha")).toMatchObject({ rule: "stop.team" });
    expect(l.guard("beta")).toBeUndefined();
    expect(await l.verify()).toMatchObject({ ok: true });
  });

  it("database unreadable (not a database) at start: the daemon opens unavailable; the stop holds and lands late", async () => {
    const { e, l } = await setup("unreadable");
    const putBack = await closedAndRemoved(e, l);
    writeFileSync(l.paths.db, "this is not an SQLite database, whatever its name says".repeat(100));
    ledger = await e.open();
    expect(ledger.state).toMatchObject({ status: "unavailable", reason: expect.stringMatching(/not a database/) });
    await ledger.stop(await stopAct(e));
    expect(ledger.guard("alpha")).toMatchObject({ rule: "stop.active" });
    await expect(notice(ledger)).rejects.toMatchObject({ rule: "ledger.unavailable" });
    rmSync(l.paths.db);
    putBack();
    await expect(notice(ledger)).resolves.toMatchObject({ seq: 2 }); // the next append reopens it
    expect(lateStops(ledger)).toHaveLength(1);
    expect(ledger.guard("alpha")).toMatchObject({ rule: "stop.active" });
  });

  it("database locked by another process: appends refused by name; the stop holds; recorded late when the lock goes", async () => {
    const { e, l } = await setup("locked");
    const require = createRequire(import.meta.url);
    child = spawn(
      process.execPath,
      [
        "-e",
        `
      const Database = require(${JSON.stringify(require.resolve("better-sqlite3"))});
      const db = new Database(${JSON.stringify(l.paths.db)});
      db.exec("BEGIN IMMEDIATE"); console.log("locked"); setInterval(() => {}, 1000);
    `,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    await new Promise<void>((resolve, reject) => {
      child!.stdout!.on("data", (d: Buffer) => d.toString().includes("locked") && resolve());
      child!.once("exit", (code) => reject(new Error(`locker exited ${code}`)));
    });
    await expect(notice(l)).rejects.toMatchObject({ rule: "ledger.unavailable", reason: expect.stringMatching(/locked|busy/i) });
    const stopped = await l.stop(await stopAct(e, "alpha"));
    expect(stopped.recorded).toBeUndefined();
    expect(l.guard("alpha")).toMatchObject({ rule: "stop.team" });
    expect(l.guard("beta")).toMatchObject({ rule: "ledger.unavailable" });
    child.kill("SIGKILL");
    await new Promise((r) => child!.once("exit", r));
    await expect(notice(l)).resolves.toBeDefined();
    expect(lateStops(l)).toMatchObject([{ flagId: stopped.flagId }]);
    expect(l.guard("alpha")).toMatchObject({ rule: "stop.team" });
    expect(l.integrityCheck()).toEqual(["ok"]);
  });
});

describe("reconciliation never clears a stop and never drops a pending revocation", () => {
  it("an older copy restored after a stop and a revocation were recorded: reconciled, both still hold", async () => {
    const { e, l } = await setup("reconcile-keeps");
    await l.close();
    const copy = join(e.root, "old.db");
    copyFileSync(l.paths.db, copy);
    ledger = await e.open();
    await ledger.stop(await stopAct(e));
    await ledger.revoke(await signOwnerAct(revocationDraft({ team: "alpha", subject: RevocationSubject.GRANT, subjectId: "g-1", reason: "r" }), e.ownerSeed));
    await ledger.close();
    for (const suffix of ["-wal", "-shm"]) rmSync(`${l.paths.db}${suffix}`, { force: true });
    copyFileSync(copy, l.paths.db);
    ledger = await e.open();
    expect(ledger.state).toMatchObject({ status: "blocked", rule: "ledger.rollback" });
    expect(ledger.guard("alpha")).toMatchObject({ rule: "stop.active" });
    expect(ledger.isRevoked(RevocationSubject.GRANT, "g-1")).toBe(true);
    await ledger.reconcile(await signOwnerAct(headReconcileDraft(ledger.observation()!), e.ownerSeed));
    expect(ledger.state.status).toBe("ready");
    // The restored copy had neither: both are appended again from their flags, late, and hold.
    const recorded = ledger.entries(0, 100).filter((x) => x.type === "stop" || x.type === "revocation");
    expect(recorded.map((x) => `${x.type}:${x.late}`).sort()).toEqual(["revocation:true", "stop:true"]);
    expect(ledger.guard("alpha")).toMatchObject({ rule: "stop.active" });
    expect(ledger.isRevoked(RevocationSubject.GRANT, "g-1")).toBe(true);
    expect(ledger.view.revoked(`${RevocationSubject.GRANT}:g-1`)).toBeDefined();
  });
});
