import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureSeatUser } from "../support/seat-user.js";
import { srcWriterTeamFile } from "../support/team-file.js";
import { expectRefused, initTeam, type LogRecord, type TeamdHarness } from "../support/teamd-harness.js";

/**
 * What each seat was served (§3: what a lab learns is what its seats were served; issue 25),
 * through a real daemon, a real seat, the real hub and ledger: a file read, a file stat, a ref
 * listing and a fetch each leave one SERVED record naming what was shown — a path and its size
 * and blob id, or the tips and the pack's size — and never the content (a canary in the file is
 * nowhere in the ledger's log). Repeats within the window are one further record with a count.
 * Distinct serves are bounded per seat (TEAMD_SERVED_RATE, here 14 at once and no refill).
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const CANARY = "served-canary-7f3a9c";
const RATE = 14;

type Rec = LogRecord & { target?: string; fields?: Record<string, string>; actor?: string };

describe.runIf(process.platform === "linux")("served reads are on record (§3, §15)", () => {
  let h: TeamdHarness;
  const served = async () => (await h.records<Rec>()).filter((r) => r.type === "served");

  beforeAll(async () => {
    h = await initTeam("teamd-served-", {
      files: { "README.md": "hello\n", "src/a.txt": `${CANARY}\n` },
      daemonEnv: { TEAMD_SERVED_RATE: `${RATE}/0` },
    });
    writeFileSync(join(h.repo, "teamd.yaml"), srcWriterTeamFile("w"));
    await h.ok(["apply", "--yes"]);
    await h.ok(["start", "--team", "proj"]);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("a file read and a stat are each one record: path, size, blob id — never the content", async () => {
    const read = await h.shim("w", "file", "read", "src/a.txt");
    expect(read.code, read.stderr).toBe(0);
    expect(read.stdout).toContain(CANARY); // control: the content did reach the seat
    expect((await h.shim("w", "file", "stat", "src/a.txt")).code).toBe(0);
    const records = await served();
    const oid = h.hubGit("rev-parse", "HEAD:src/a.txt");
    expect(records.map((r) => [r.action, r.actor, r.fields?.path, r.fields?.size, r.fields?.oid, r.fields?.count])).toEqual([
      ["file.read", "seat:proj/w", "src/a.txt", String(CANARY.length + 1), oid, "1"],
      ["file.stat", "seat:proj/w", "src/a.txt", String(CANARY.length + 1), oid, "1"],
    ]);
    const log = await h.ok(["log", "--json"]);
    expect(log).not.toContain(CANARY);
  });

  it("a ref listing is on record: how many tips, their digest, the tips by name", async () => {
    const before = (await served()).length;
    // The seat's clone already has main: this fetch lists the refs and needs no pack.
    const fetched = await h.inSeat("w", "git fetch -q teamd 2>&1");
    expect(fetched.code, fetched.stdout + fetched.stderr).toBe(0);
    const fresh = (await served()).slice(before);
    expect(fresh.map((r) => r.action)).toEqual(["git.list"]);
    expect(fresh[0]?.fields).toMatchObject({
      tips: "1",
      tips_sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      tip: `${h.hubGit("rev-parse", "refs/heads/main")} refs/heads/main`,
    });
  });

  it("a fetch of a new trunk commit records its tip and pack bytes", async () => {
    const w = await h.shim("w", "file", "write", "src/b.txt", "--branch", "b", "-m", "b");
    expect(w.code, w.stderr).toBe(0);
    const before = (await served()).length;
    const fetched = await h.inSeat("w", "git fetch -q teamd 2>&1");
    expect(fetched.code, fetched.stdout + fetched.stderr).toBe(0);
    // Before the pack leaves, its tips; once it has, its bytes, pointing at the first. The
    // second is written after the stream's end (git does not wait for it): looked for until it is.
    const fetchesNow = async () => (await served()).slice(before).filter((r) => r.action === "git.fetch");
    let fetches = await fetchesNow();
    for (const deadline = Date.now() + 10_000; fetches.length < 2 && Date.now() < deadline; fetches = await fetchesNow())
      await new Promise((resolve) => setTimeout(resolve, 100));
    const tip = h.hubGit("rev-parse", "refs/heads/seat/w/b");
    expect(fetches).toHaveLength(2);
    expect(fetches[0]?.fields?.tip).toContain(tip);
    expect(fetches[1]?.fields?.of).toBe(String(fetches[0]?.seq));
    expect(Number(fetches[1]?.fields?.pack_bytes)).toBeGreaterThan(0);
  });

  it("repeats within the window are one more record with their count; distinct serves past the rate are refused seat.served-rate", async () => {
    const before = (await served()).length;
    // At once, so all five land inside one window however loaded the machine is.
    const stats = await Promise.all(Array.from({ length: 5 }, () => h.shim("w", "file", "stat", "README.md")));
    expect(stats.map((s) => s.code)).toEqual([0, 0, 0, 0, 0]);
    let records = (await served()).slice(before);
    expect(records.map((r) => [r.action, r.fields?.path, r.fields?.count])).toEqual([["file.stat", "README.md", "1"]]);
    // The window closes (10 s): the four repeats are one record, pointing at the first.
    const deadline = Date.now() + 20_000;
    while (records.length < 2 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 500));
      records = (await served()).slice(before);
    }
    expect(records.map((r) => [r.action, r.fields?.path, r.fields?.count, r.fields?.repeats_of])).toEqual([
      ["file.stat", "README.md", "1", undefined],
      ["file.stat", "README.md", "4", String(records[0]?.seq)],
    ]);
    // Distinct serves spend the rate (first records only; repeats are free): the one past it is refused, and recorded.
    const firsts = (await served()).filter((r) => r.fields?.count === "1").length;
    expect(firsts).toBeLessThan(RATE);
    for (let i = firsts; i < RATE; i++) expect((await h.shim("w", "file", "stat", `src/none-${i}.txt`)).code).toBe(0);
    await expectRefused(h.shim("w", "file", "stat", "src/one-too-many.txt"), "seat.served-rate");
    const refusals = (await h.records<Rec>()).filter((r) => r.type === "refusal" && r.result === "seat.served-rate");
    expect(refusals).toHaveLength(1);
    expect((await served()).filter((r) => r.fields?.count === "1")).toHaveLength(RATE);
    // The seat keeps running: a repeat of what it was served is still answered (no new record).
    expect((await h.shim("w", "file", "stat", "src/none-13.txt")).code).toBe(0);
  }, 60_000);
});
