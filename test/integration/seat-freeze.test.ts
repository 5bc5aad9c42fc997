import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { waitFor } from "../support/wait.js";
import { appliedTeam } from "../support/applied-team.js";
import type { TeamdHarness } from "../support/teamd-harness.js";

/**
 * `teamd freeze` / `teamd thaw` through a real daemon and a real contained seat (issue 7: the
 * seat's v2 cgroup "for kill and freeze"). A seat whose command counts into a file in its
 * repository: frozen, the count stands still (and, as a control, it moved before and moves
 * again after the thaw); status says so; exec is refused while frozen (it would freeze too);
 * a frozen seat still stops, leaving no process; every freeze and thaw is recorded first. As
 * an ordinary user the seat has no cgroup of its own and the freeze is refused, naming why.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const TEAM_FILE = teamFile(`  counter:
    lab: anthropic
    roles: [observer]
    start:
      command: [sh, -c, "i=0; while :; do i=$((i+1)); echo $i > count.tmp; mv count.tmp count.txt; sleep 0.02; done"]
`);

interface SeatJson {
  seat: string;
  state: string;
  initPid: number;
  repository: string;
  frozen?: boolean;
}

describe.runIf(process.platform === "linux")("teamd freeze / thaw: a seat stops where it stands, and runs on", () => {
  let h: TeamdHarness;

  const seatStatus = async (): Promise<SeatJson | undefined> => {
    const result = await h.run(["status", "--json"]);
    expect(result.code, result.stderr).toBe(0);
    return (JSON.parse(result.stdout) as { seats: SeatJson[] }).seats.find((s) => s.seat === "counter");
  };
  const count = (seat: SeatJson) => {
    try {
      return Number(readFileSync(join(seat.repository, "count.txt"), "utf8").trim());
    } catch {
      return 0;
    }
  };
  /** Two reads of the count `ms` apart. */
  const moved = async (seat: SeatJson, ms = 400) => {
    const before = count(seat);
    await sleep(ms);
    return count(seat) !== before;
  };
  const records = async (action: string) => (await h.records<{ action: string; actor: string; type: string }>()).filter((r) => r.action === action);

  beforeAll(async () => {
    h = await appliedTeam("teamd-freeze-", TEAM_FILE);
    await h.ok(["start", "counter@proj"]);
  }, 90_000);

  afterAll(async () => {
    await h?.run(["stop", "counter@proj"]).catch(() => undefined);
    await h?.cleanup();
  }, 60_000);

  describe.runIf(asRoot)("as root: the seat's own v2 cgroup", () => {
    it("freeze stops the count where it stands; status says frozen; exec is refused; thaw lets it run on", async () => {
      const seat = (await seatStatus()) as SeatJson;
      expect(seat.state).toBe("running");
      expect(await waitFor(() => count(seat) > 0, 10_000)).toBe(true);
      // The control: running, the count moves.
      expect(await moved(seat)).toBe(true);

      const frozen = await h.run(["freeze", "counter@proj", "--json"]);
      expect(frozen.code, frozen.stderr).toBe(0);
      expect(JSON.parse(frozen.stdout)).toMatchObject({ frozen: true, seq: expect.any(Number) });
      expect(await moved(seat, 600)).toBe(false);
      expect(await seatStatus()).toMatchObject({ state: "running", frozen: true });
      expect((await h.run(["status"])).stdout).toMatch(/counter@proj {2}running \(FROZEN: teamd thaw\)/);
      // Freezing twice is no second act.
      expect(JSON.parse((await h.run(["freeze", "counter@proj", "--json"])).stdout)).toMatchObject({ frozen: true, seq: null });

      const exec = await h.run(["exec", "counter@proj", "--", "true"]);
      expect(exec.code).toBe(3);
      expect(exec.stderr).toContain("refused by seat.frozen");

      const thawed = await h.run(["thaw", "counter@proj"]);
      expect(thawed.code, thawed.stderr).toBe(0);
      expect(thawed.stdout).toMatch(/thawed \(record \d+\)/);
      expect(await moved(seat)).toBe(true);
      expect((await seatStatus())?.frozen).toBe(false);
      expect((await h.run(["exec", "counter@proj", "--", "true"])).code).toBe(0);

      // Each act was recorded, by the owner, before it happened.
      expect(await records("seat.freeze")).toHaveLength(1);
      expect(await records("seat.thaw")).toHaveLength(1);
    }, 120_000);

    it("a frozen seat still stops: no process of it is left", async () => {
      const seat = (await seatStatus()) as SeatJson;
      expect((await h.run(["freeze", "counter@proj"])).code).toBe(0);
      expect(existsSync(`/proc/${seat.initPid}`)).toBe(true);
      const stopped = await h.run(["stop", "counter@proj"]);
      expect(stopped.code, stopped.stderr).toBe(0);
      expect(await waitFor(() => !existsSync(`/proc/${seat.initPid}`), 10_000)).toBe(true);
      expect(await seatStatus()).toBeUndefined();
      // Started again, it runs (a new run is never born frozen).
      expect((await h.run(["start", "counter@proj"])).code).toBe(0);
      const again = (await seatStatus()) as SeatJson;
      expect(again.frozen).toBe(false);
      expect(await waitFor(() => count(again) > 0, 10_000)).toBe(true);
      expect(await moved(again)).toBe(true);
    }, 120_000);
  });

  describe.runIf(!asRoot)("as an ordinary user: no cgroup of its own", () => {
    it("the freeze is refused, naming why and the fix; the seat runs on", async () => {
      const seat = (await seatStatus()) as SeatJson;
      const frozen = await h.run(["freeze", "counter@proj"]);
      expect(frozen.code).toBe(3);
      expect(frozen.stderr).toContain("refused by containment.freeze");
      expect(frozen.stderr).toContain("run the daemon as root");
      expect(await waitFor(() => count(seat) > 0, 10_000)).toBe(true);
      expect(await moved(seat)).toBe(true);
      expect(await records("seat.freeze")).toHaveLength(0);
    }, 60_000);
  });
});
