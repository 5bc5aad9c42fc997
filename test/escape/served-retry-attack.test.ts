import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ShimService } from "../../src/gen/teamd/v1/shim_pb.js";
import { createRpcClient } from "../../src/rpc/index.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { leadsWriterTeamFile } from "../support/team-file.js";
import { initTeam, type LogRecord, type TeamdHarness } from "../support/teamd-harness.js";

/**
 * Attacks on served-read records and the one retry rule (issue 25; §3 "what a lab learns is
 * what its seats were served", §15 "a byte-identical retry returns the recorded result, a
 * different payload is refused"; daemon/seat/pipeline.ts `served`, `servedBudget`, `record`,
 * `act`; daemon/seat/files.ts, daemon/seat/git.ts, daemon/seat/leases.ts), from a real seat's
 * socket (a raw gRPC client on it is what a program in the seat has) and its shim, against a
 * real daemon, hub and ledger. The harness plays the owner (team file, apply, the trunk).
 *
 * Every attack asserts the secure outcome and has a control that shows it can fail.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const CANARY = "SERVED-RETRY-CANARY-c41e9";
/** Near-incompressible content, so a fetch's pack is many chunks (the stream is still running when the seat cuts it). */
const BIG = randomBytes(8 * 1024 * 1024).toString("base64");

type Rec = LogRecord & { target?: string; fields?: Record<string, string>; actor?: string; result?: string };

// w leads the team (a lease issues only with a present leads, §9) and leases from its own write; r reads.
const TEAM = leadsWriterTeamFile("src/", "      gate: ~\n");

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.runIf(process.platform === "linux")("served-read records and the retry rule under attack (§3, §15)", () => {
  let h: TeamdHarness;
  /** The size of a whole pack of the trunk (r's fetch, the control of the cut fetch). */
  let trunkPackBytes = 0;
  const client = (seat: string) => createRpcClient(ShimService, h.seatSocket(seat), { deadlineMs: 30_000 });
  const served = async () => (await h.records<Rec>()).filter((r) => r.type === "served");
  const leaseRecords = async () => (await h.records<Rec>()).filter((r) => r.type === "lease").length;

  /** A file write from w's socket: the new commit on seat/w/<branch>. */
  const write = async (requestId: string, path: string, content: string, branch: string): Promise<string> => {
    const c = client("w");
    const bytes = new TextEncoder().encode(content);
    async function* parts() {
      yield { part: { case: "header" as const, value: { requestId, path, branch, message: "served-retry", size: BigInt(bytes.byteLength) } } };
      yield { part: { case: "data" as const, value: bytes } };
    }
    try {
      return (await c.fileWrite(parts())).commit;
    } finally {
      c.close();
    }
  };
  /** The owner moves the trunk (a merge landing between two of a seat's reads). */
  const trunkTo = (commit: string) => h.hubGit("update-ref", "refs/heads/main", commit);

  const readRaw = async (seat: string, path: string): Promise<{ content: string; oid: string }> => {
    const c = client(seat);
    let content = "";
    let oid = "";
    try {
      for await (const m of c.fileRead({ path })) {
        content += new TextDecoder().decode(m.content);
        if (m.oid !== "") oid = m.oid;
      }
    } finally {
      c.close();
    }
    return { content, oid };
  };
  const statRaw = async (seat: string, path: string) => {
    const c = client(seat);
    try {
      const s = await c.fileStat({ path });
      return { exists: s.exists, oid: s.oid, size: Number(s.size) };
    } finally {
      c.close();
    }
  };
  const lease = async (seat: string, requestId: string, scope: string, recipient = "r") => {
    const c = client(seat);
    try {
      const r = await c.leaseIssue({ requestId, recipient, capability: "write", scope, ttlMs: 600_000n });
      return { id: r.lease?.leaseId ?? "", live: r.lease?.live ?? false, seq: r.seq };
    } finally {
      c.close();
    }
  };
  const revoke = async (seat: string, requestId: string, leaseId: string) => {
    const c = client(seat);
    try {
      return (await c.leaseRevoke({ requestId, leaseId })).revoked;
    } finally {
      c.close();
    }
  };
  /** Wait until the served records of `pick` number at least `n` (a window closes after 10 s). */
  const servedUntil = async (pick: (r: Rec) => boolean, n: number, ms = 20_000): Promise<Rec[]> => {
    const deadline = Date.now() + ms;
    let found = (await served()).filter(pick);
    while (found.length < n && Date.now() < deadline) {
      await sleep(500);
      found = (await served()).filter(pick);
    }
    return found;
  };

  beforeAll(async () => {
    h = await initTeam("teamd-served-retry-", {
      files: { "README.md": "hello\n", "src/a.txt": `${CANARY}\n`, "src/c.txt": "c\n", "big/blob.txt": BIG },
    });
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM);
    await h.ok(["apply", "--yes"]);
    await h.ok(["start", "--team", "proj"]);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  // ---------------------------------------------------------------- served reads

  it("coalescing hides no distinct result: a stat whose answer changed within the window names what it showed", async () => {
    // Control: a read's window is keyed on path AND blob, so a read of changed content is a new record naming the new blob.
    const trunk0 = h.hubGit("rev-parse", "refs/heads/main");
    const before = await readRaw("w", "src/c.txt");
    expect(before.content).toBe("c\n");
    // Attack: a stat of a path that is not there yet (the record says exists=false) ...
    expect((await statRaw("w", "src/new.txt")).exists).toBe(false);
    // ... then a merge lands it (and changes src/c.txt), and the seat asks again within 10 s.
    await write("sr-trunk-1", "src/new.txt", "new secret-ish content\n", "nt");
    const withNew = h.hubGit("rev-parse", "refs/heads/seat/w/nt");
    const moved = await write("sr-trunk-2", "src/c.txt", "c changed\n", "nt");
    trunkTo(moved);
    const after = await statRaw("w", "src/new.txt");
    expect(after.exists).toBe(true); // the seat was shown the new blob id and size
    const newOid = h.hubGit("rev-parse", "HEAD:src/new.txt");
    expect(after.oid).toBe(newOid);
    const changed = await readRaw("w", "src/c.txt");
    expect(changed.content).toBe("c changed\n");
    // Let every window close (10 s) and their repeat records land.
    const stats = await servedUntil((r) => r.action === "file.stat" && r.fields?.path === "src/new.txt", 2);
    const reads = (await served()).filter((r) => r.action === "file.read" && r.fields?.path === "src/c.txt");
    // Control holds: two reads, two records, each naming the blob it served.
    expect(reads.map((r) => r.fields?.oid)).toEqual([before.oid, changed.oid]);
    expect(withNew).toMatch(/^[0-9a-f]{40}$/);
    trunkTo(trunk0);
    // Secure: some record of the stats names the blob id the second stat showed.
    expect(
      stats.map((r) => r.fields?.oid),
      `stat records of src/new.txt: ${JSON.stringify(stats.map((r) => r.fields))}`,
    ).toContain(newOid);
  }, 60_000);

  it("concurrent identical reads: every copy served is counted on record, none shows content", async () => {
    const N = 12;
    const results = await Promise.all(Array.from({ length: N }, () => readRaw("w", "src/a.txt")));
    for (const r of results) expect(r.content).toBe(`${CANARY}\n`); // control: each copy got the content
    const records = await servedUntil((r) => r.action === "file.read" && r.fields?.path === "src/a.txt", 2);
    const total = records.reduce((sum, r) => sum + Number(r.fields?.count ?? 0), 0);
    expect(records[0]?.fields?.count).toBe("1");
    expect(total).toBe(N);
    expect(new Set(records.map((r) => r.fields?.oid))).toEqual(new Set([results[0]?.oid]));
    expect(await h.ok(["log", "--json"])).not.toContain(CANARY);
  }, 60_000);

  it("a fetch the seat cuts short after its first chunk is on record with the bytes that left", async () => {
    const tip = h.hubGit("rev-parse", "refs/heads/main");
    // Control: r's full fetch of the trunk is one record with its pack's bytes.
    const full = client("r");
    let fullBytes = 0;
    try {
      for await (const m of full.fetch({ wants: [tip], haves: [] })) fullBytes += m.data.byteLength;
    } finally {
      full.close();
    }
    expect(fullBytes).toBeGreaterThan(1024 * 1024);
    trunkPackBytes = fullBytes;
    // Two records: the tips, before the pack left; its bytes, once it had, pointing at the first.
    const rFetch = await servedUntil((r) => r.action === "git.fetch" && r.actor === "seat:proj/r", 2, 5_000);
    expect(rFetch[0]?.fields?.tip).toContain(tip);
    expect(rFetch[1]?.fields).toMatchObject({ of: String(rFetch[0]?.seq), pack_bytes: String(fullBytes) });
    // Attack: w takes the first chunk and cancels the stream.
    const cut = client("w");
    let got = 0;
    try {
      for await (const m of cut.fetch({ wants: [tip], haves: [] })) {
        got += m.data.byteLength;
        break;
      }
    } finally {
      cut.close();
    }
    expect(got).toBeGreaterThan(0);
    expect(got).toBeLessThan(fullBytes);
    const wFetch = await servedUntil((r) => r.action === "git.fetch" && r.actor === "seat:proj/w", 2, 10_000);
    expect(wFetch).toHaveLength(2);
    expect(wFetch[0]?.fields?.tip).toContain(tip);
    expect(wFetch[1]?.fields?.of).toBe(String(wFetch[0]?.seq));
    expect(Number(wFetch[1]?.fields?.pack_bytes)).toBeGreaterThanOrEqual(got);
  }, 60_000);

  it("a fetch stream the seat holds open after reading 40% of the pack: what left is on record while it holds it", async () => {
    // A different tip than the last test's (a fresh subject, not a repeat inside an open window);
    // with no haves its pack carries the trunk's history, the 8 MiB blob among it.
    const tip = await write("sr-held-1", "src/held.txt", "held\n", "held");
    const held = client("w");
    const stream = held.fetch({ wants: [tip], haves: [] })[Symbol.asyncIterator]();
    let got = 0;
    try {
      // The seat reads until it holds 40% of what a whole trunk pack is, then reads nothing more and keeps the stream open.
      while (got < 0.4 * trunkPackBytes) {
        const next = await stream.next();
        if (next.done === true) break;
        got += next.value.data.byteLength;
      }
      expect(got).toBeGreaterThanOrEqual(0.4 * trunkPackBytes); // control: 40% of the pack left the daemon
      await sleep(6_000);
      const whileHeld = (await served()).filter((r) => r.action === "git.fetch" && r.fields?.tip?.includes(tip) === true);
      // Control: cutting the stream lands the record (so the record is only missing while it is held).
      await stream.return?.(undefined);
      const afterCut = await servedUntil((r) => r.action === "git.fetch" && r.fields?.tip?.includes(tip) === true, 1, 10_000);
      expect(afterCut).toHaveLength(1);
      // Secure: the bytes the seat held were on record while it held the stream.
      expect(whileHeld, `${got} of about ${trunkPackBytes} bytes of the pack left; no served record while the stream is held`).toHaveLength(1);
    } finally {
      await stream.return?.(undefined);
      held.close();
    }
  }, 60_000);

  it("a served record stays bounded: a 60 KiB path is cut where it is recorded, a short one is verbatim", async () => {
    const long = `src/${"p".repeat(60 * 1024)}.txt`;
    expect((await statRaw("w", long)).exists).toBe(false);
    expect((await statRaw("w", "src/short-path.txt")).exists).toBe(false);
    const records = await served();
    const short = records.find((r) => r.action === "file.stat" && r.fields?.path === "src/short-path.txt");
    expect(short).toBeDefined(); // control: a path is recorded as it was asked
    const cut = records.find((r) => r.action === "file.stat" && r.fields?.path?.startsWith("src/ppp") === true);
    expect(cut).toBeDefined();
    expect(JSON.stringify(cut).length).toBeLessThan(4 * 1024);
  }, 60_000);

  it("the open windows of distinct serves do not hold what the seat sent: 250 distinct 120 KiB paths cost the daemon what 250 repeats of one do", async () => {
    const pid = h.daemon?.child.pid;
    expect(pid).toBeDefined();
    const rss = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? "0") * 1024;
    const N = 250;
    const pad = "q".repeat(120 * 1024);
    /** Stat `paths` four at a time, sampling the daemon's RSS: its peak growth. */
    const peakGrowth = async (paths: readonly string[]): Promise<number> => {
      const before = rss();
      let peak = before;
      let next = 0;
      const worker = async () => {
        for (let i = next++; i < paths.length; i = next++) {
          expect((await statRaw("w", paths[i] as string)).exists).toBe(false);
          peak = Math.max(peak, rss());
        }
      };
      await Promise.all([worker(), worker(), worker(), worker()]);
      return Math.max(peak, rss()) - before;
    };
    // Control: the same calls, the same bytes sent and the same git work — one path repeated (one window).
    const control = await peakGrowth(Array.from({ length: N }, () => `src/mem-same-${pad}`));
    // Attack: each path distinct (each its own window, held 10 s).
    const attack = await peakGrowth(Array.from({ length: N }, (_, i) => `src/mem-${i}-${pad}`));
    const firsts = (await served()).filter((r) => r.action === "file.stat" && /^src\/mem-\d/.test(r.fields?.path ?? "") && r.fields?.count === "1");
    expect(firsts.length).toBe(N); // the attack's distinct serves were served and recorded
    // Secure: the windows hold a bounded key per serve, not the 120 KiB the seat sent (N of them would be 29 MiB, twice over).
    expect(attack - control, `daemon RSS peak growth: attack ${(attack / 2 ** 20).toFixed(1)} MiB, control ${(control / 2 ** 20).toFixed(1)} MiB`).toBeLessThan(
      16 * 2 ** 20,
    );
  }, 60_000);

  // ---------------------------------------------------------------- the retry rule

  it("another seat's request id is its own: r replaying w's lease issue, bytes and all, gets no lease", async () => {
    const leases = await leaseRecords();
    const mine = await lease("w", "sra-cross-1", "path=src/x/");
    expect(mine.id).not.toBe("");
    // Control: w's byte-identical retry is its lease, no new record.
    expect(await lease("w", "sra-cross-1", "path=src/x/")).toEqual(mine);
    expect(await leaseRecords()).toBe(leases + 1);
    // Attack: r (no write) sends the same id and bytes; it is decided as r's own new request.
    await expect(lease("r", "sra-cross-1", "path=src/x/")).rejects.toThrow(/refused/);
    // And r revoking w's lease under w's issue id: decided anew (r is not its issuer), not replayed.
    await expect(revoke("r", "sra-cross-1", mine.id)).rejects.toThrow(/refused/);
    expect(await leaseRecords()).toBe(leases + 1);
    const revocations = (await h.records<Rec>()).filter((r) => r.type === "revocation");
    expect(revocations.filter((r) => JSON.stringify(r).includes(mine.id))).toHaveLength(0);
  }, 60_000);

  it("an id is bound to one kind: a lease id is no revoke's, a write's id is no lease's", async () => {
    const l = await lease("w", "sra-kind-1", "path=src/k/");
    await expect(revoke("w", "sra-kind-1", l.id)).rejects.toThrow(/request\.replay-mismatch/);
    const commit = await write("sra-kind-2", "src/kind.txt", "k\n", "kind");
    expect(commit).toMatch(/^[0-9a-f]{40}$/);
    const leases = await leaseRecords();
    await expect(lease("w", "sra-kind-2", "path=src/k/")).rejects.toThrow(/request\.replay-mismatch/);
    expect(await leaseRecords()).toBe(leases);
    // Control: a fresh id revokes, and issues.
    expect(await revoke("w", "sra-kind-3", l.id)).toEqual([l.id]);
    expect((await lease("w", "sra-kind-4", "path=src/k/")).id).not.toBe("");
  }, 60_000);

  it("a revoked lease is not re-issued by replaying its issue; a revoke's id cannot revoke another lease", async () => {
    const l1 = await lease("w", "sra-re-1", "path=src/r1/");
    const l2 = await lease("w", "sra-re-2", "path=src/r2/");
    expect(await revoke("w", "sra-re-rv", l1.id)).toEqual([l1.id]);
    const leases = await leaseRecords();
    // Attack 1: the issue replayed after its lease was revoked answers that lease, dead — no new lease.
    const again = await lease("w", "sra-re-1", "path=src/r1/");
    expect(again.id).toBe(l1.id);
    expect(again.live).toBe(false);
    expect(await leaseRecords()).toBe(leases);
    // Attack 2: the revoke's id, naming l2: refused, l2 still live.
    await expect(revoke("w", "sra-re-rv", l2.id)).rejects.toThrow(/request\.replay-mismatch/);
    // The identical revoke retry answers l1 only.
    expect(await revoke("w", "sra-re-rv", l1.id)).toEqual([l1.id]);
    const r = client("r");
    try {
      const held = (await r.leaseList({})).leases.map((e) => e.leaseId);
      expect(held).toContain(l2.id); // control: l2 is r's, live
      expect(held).not.toContain(l1.id);
    } finally {
      r.close();
    }
  }, 60_000);

  it("concurrent copies of one lease issue make one lease; concurrent different bytes under one id make at most one", async () => {
    const leases = await leaseRecords();
    const same = await Promise.allSettled(Array.from({ length: 8 }, () => lease("w", "sra-conc-1", "path=src/c1/")));
    const ok = same.filter((s): s is PromiseFulfilledResult<{ id: string; live: boolean; seq: bigint }> => s.status === "fulfilled");
    expect(ok).toHaveLength(8);
    expect(new Set(ok.map((s) => s.value.id)).size).toBe(1);
    expect(await leaseRecords()).toBe(leases + 1);
    const mixed = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => lease("w", "sra-conc-2", `path=src/c2-${i}/`)));
    const won = mixed.filter((s) => s.status === "fulfilled");
    expect(won).toHaveLength(1);
    for (const s of mixed) if (s.status === "rejected") expect(String(s.reason)).toMatch(/request\.replay-mismatch/);
    expect(await leaseRecords()).toBe(leases + 2);
  }, 60_000);

  it("a gate's request id is bound to its branch and verdict: another branch or the other verdict under it is refused, not answered with the first gate", async () => {
    await write("sra-gate-w1", "src/gate-a.txt", "a\n", "gate-a");
    await write("sra-gate-w2", "src/gate-b.txt", "b\n", "gate-b");
    const gate = async (requestId: string, branch: string, pass: boolean) => {
      const c = client("r");
      try {
        return (await c.gate({ requestId, branch, into: "", pass })).act;
      } finally {
        c.close();
      }
    };
    const refused = async () => (await h.records<Rec>()).filter((r) => r.type === "refusal" && r.result === "request.replay-mismatch").length;
    // r gates seat/w/gate-a: refuse.
    const first = await gate("sra-gate-1", "seat/w/gate-a", false);
    expect(first?.intentSeq).toBeGreaterThan(0n);
    // Control: the byte-identical retry is that gate, nothing new.
    expect((await gate("sra-gate-1", "seat/w/gate-a", false))?.intentSeq).toBe(first?.intentSeq);
    // Control: a new id gates gate-b anew.
    const fresh = await gate("sra-gate-2", "seat/w/gate-b", true);
    expect(fresh?.intentSeq).not.toBe(first?.intentSeq);
    const mismatches = await refused();
    // Attack: the first gate's id with another branch, and with the other verdict.
    const other = await gate("sra-gate-1", "seat/w/gate-b", true).then(
      (act) => `answered with intent ${act?.intentSeq} (effect ${act?.effectId.slice(0, 12)}, the first gate's: ${first?.effectId.slice(0, 12)})`,
      (error: unknown) => String(error),
    );
    const flipped = await gate("sra-gate-1", "seat/w/gate-a", true).then(
      (act) => `answered with intent ${act?.intentSeq} (the first gate's refuse, told as this pass)`,
      (error: unknown) => String(error),
    );
    expect({ other, flipped }).toEqual({
      other: expect.stringMatching(/request\.replay-mismatch/),
      flipped: expect.stringMatching(/request\.replay-mismatch/),
    });
    expect(await refused()).toBe(mismatches + 2);
  }, 60_000);

  // Last: it stops and restarts the daemon.
  it("a held fetch's record survives the daemon going away: what left before the stop is on record after it", async () => {
    const tip = await write("sr-restart-1", "src/restart.txt", "restart\n", "restart");
    const held = client("w");
    const stream = held.fetch({ wants: [tip], haves: [] })[Symbol.asyncIterator]();
    let got = 0;
    try {
      while (got < 0.4 * trunkPackBytes) {
        const next = await stream.next();
        if (next.done === true) break;
        got += next.value.data.byteLength;
      }
      expect(got).toBeGreaterThanOrEqual(0.4 * trunkPackBytes); // control: 40% of the pack left the daemon
      // The owner restarts the daemon while the seat holds the stream.
      await h.stopDaemon();
      await h.startDaemon();
    } finally {
      await stream.return?.(undefined).catch(() => undefined);
      held.close();
    }
    const records = (await served()).filter((r) => r.action === "git.fetch" && r.fields?.tip?.includes(tip) === true);
    // Control: the same log shows the earlier fetches' records (the log is read whole after the restart).
    expect((await served()).filter((r) => r.action === "git.fetch").length).toBeGreaterThanOrEqual(2);
    expect(records, `${got} bytes of the pack left before the daemon stopped; no served record of it after`).toHaveLength(1);
  }, 60_000);
});
