import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ShimService } from "../../src/gen/teamd/v1/shim_pb.js";
import { createRpcClient } from "../../src/rpc/index.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { expectRefused, initTeam, type TeamdHarness } from "../support/teamd-harness.js";

/**
 * The envelope's unattended runtime (§8; issue 27, part), through a real daemon and real seats:
 * a team with `runtime: 15s` runs until fifteen seconds after the owner's last renewal, then pauses —
 * a gated act is refused `envelope.runtime`, a start too, the owner is told once, and a seat
 * with its own v2 cgroup (root) stands frozen (its counter stops; the counter moving before is
 * the control) — and `teamd renew --team` thaws it, the act allowed again. A daemon restart and a
 * seat's own acts leave the clock where it was. (A seat without a cgroup is halted into a
 * handoff checkpoint: envelope-runtime-halt.test.ts.)
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const RUNTIME_S = 15;
const TEAM_FILE = teamFile(`  w:
    lab: anthropic
    capabilities:
      read: ~
      write: { path: src/ }
    start:
      command: [sh, -c, "i=0; while :; do i=$((i+1)); echo $i > count.tmp; mv count.tmp count.txt; sleep 0.05; done"]
  x:
    lab: anthropic
    roles: [observer]
    start:
      command: [sleep, "3600"]
`).replace("seats:\n", `ceiling:\n  runtime: ${RUNTIME_S}s\nseats:\n`);

describe.runIf(process.platform === "linux" && asRoot)("the envelope's unattended runtime (§8)", () => {
  let h: TeamdHarness;
  let appliedAt = 0;
  const write = (name: string) => h.shim("w", "file", "write", `src/${name}.txt`, "--branch", name, "-m", name);
  /** A gated act on the seat's own socket, with no git work (an exec would meet the freeze first: seat.frozen). */
  const checkpoint = async (note: string) => {
    const client = createRpcClient(ShimService, h.seatSocket("w"), { deadlineMs: 30_000 });
    try {
      return await client.checkpoint({ requestId: `rt-${note}`, note });
    } finally {
      client.close();
    }
  };
  /**
   * The seat's counter (count.txt in its repository, twenty times a second), written whole and
   * renamed into place: a plain `echo > count.txt` was read empty between its truncate and its
   * write (a clean-clone run read 0 right after the thaw).
   */
  const count = async () => {
    const seat = (JSON.parse(await h.ok(["status", "--json"])) as { seats: { seat: string; repository: string }[] }).seats.find((x) => x.seat === "w");
    const n = Number(readFileSync(join(seat?.repository ?? "/nonexistent", "count.txt"), "utf8").trim());
    expect(n).toBeGreaterThan(0); // control: the counter runs, and is read
    return n;
  };
  const frozen = async () =>
    (JSON.parse(await h.ok(["status", "--json"])) as { seats: { seat: string; frozen?: boolean }[] }).seats.find((s) => s.seat === "w")?.frozen === true;
  const runtimeNotices = async () =>
    (await h.records<{ type: string; detail?: { subject?: string } }>()).filter(
      (r) => r.type === "notice" && r.detail?.subject === "runtime spent (team proj): paused",
    );

  beforeAll(async () => {
    h = await initTeam("teamd-runtime-", { files: { "README.md": "hello\n", "src/a.txt": "a\n" } });
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE);
    await h.ok(["apply", "--yes"]);
    appliedAt = Date.now();
    await h.ok(["start", "w"]);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("runs until the runtime is spent, then pauses: acts and starts refused, the seat frozen, the owner told once; renew thaws it", async () => {
    // Before the limit: a seat's own act (it renews nothing), and a daemon restart (nor that).
    expect((await write("before")).code).toBe(0);
    await h.daemon?.stop();
    await h.startDaemon();
    await h.ok(["start", "w"]);
    await sleep(Math.max(0, appliedAt + RUNTIME_S * 1000 + 2500 - Date.now()));
    await expect(checkpoint("after")).rejects.toThrow(/envelope\.runtime/);
    await expectRefused(h.run(["start", "x"]), "envelope.runtime");
    // Frozen where it stands (the watch looks every second).
    for (let i = 0; i < 20 && !(await frozen()); i++) await sleep(250);
    expect(await frozen()).toBe(true);
    const a = await count();
    await sleep(600);
    expect(await count()).toBe(a);
    expect(await runtimeNotices()).toHaveLength(1);
    const paused = JSON.parse(await h.ok(["status", "--json"])) as { teams: { runtime: unknown }[] };
    expect(paused.teams[0]?.runtime).toEqual({ limitMs: RUNTIME_S * 1000, leftMs: 0, paused: true });
    expect(await h.ok(["status"])).toContain("runtime spent: PAUSED (teamd renew --team proj)");
    // The owner renews: thawed, the count moves again, the act goes through.
    const renewed = await h.run(["renew", "--team", "proj", "--json"]);
    expect(renewed.code, renewed.stdout + renewed.stderr).toBe(0);
    for (let i = 0; i < 20 && (await frozen()); i++) await sleep(250);
    expect(await frozen()).toBe(false);
    const b = await count();
    await sleep(600);
    expect(await count()).toBeGreaterThan(b);
    expect((await write("renewed")).code).toBe(0);
    expect(await runtimeNotices()).toHaveLength(1);
    const running = JSON.parse(await h.ok(["status", "--json"])) as { teams: { runtime: { leftMs: number; paused: boolean } }[] };
    expect(running.teams[0]?.runtime.paused).toBe(false);
    expect(running.teams[0]?.runtime.leftMs).toBeGreaterThan(0);
  }, 120_000);

  it("the next pause is told once more; a daemon restarted during it tells nothing again", async () => {
    for (let i = 0; i < 100 && (await runtimeNotices()).length < 2; i++) await sleep(250);
    expect(await runtimeNotices()).toHaveLength(2);
    await h.daemon?.stop();
    await h.startDaemon();
    await sleep(2_500);
    expect(await runtimeNotices()).toHaveLength(2);
    await expectRefused(h.run(["start", "w"]), "envelope.runtime");
  }, 60_000);
});
