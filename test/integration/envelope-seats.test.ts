import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureSeatUser } from "../support/seat-user.js";
import { expectRefused, initTeam, type TeamdHarness } from "../support/teamd-harness.js";

/**
 * The resource envelope's seats (§8; issue 27), through a real daemon and real seats: a lab
 * capped at one live seat refuses a team file declaring two (at apply), and refuses the launch
 * of a second while the first runs — here a seat renamed away by a later apply, still running
 * and still counted as the lab it launched as. Stopping it makes room; the control, an uncapped
 * file, runs both.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const seat = (name: string) => `  ${name}:\n    lab: anthropic\n    roles: [observer]\n    start:\n      command: [sleep, "3600"]\n`;
const file = (names: string[], cap: number | undefined) =>
  `version: 1\nteam: proj\ndeclare:\n  branches: [main]\n  labs: [anthropic]\nreview: { mode: distinct-seat }\n${cap === undefined ? "" : `ceiling:\n  seats: { anthropic: ${cap} }\n`}seats:\n${names.map(seat).join("")}`;

describe.runIf(process.platform === "linux")("the envelope's seats per lab (§8)", () => {
  let h: TeamdHarness;
  const apply = (names: string[], cap: number | undefined) => {
    writeFileSync(join(h.repo, "teamd.yaml"), file(names, cap));
    return h.run(["apply", "--yes", "--json"]);
  };
  const running = async () => (JSON.parse(await h.ok(["status", "--json"])) as { seats: { seat: string }[] }).seats.map((s) => s.seat).sort();

  beforeAll(async () => {
    h = await initTeam("teamd-envseats-");
  }, 60_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("a file declaring two seats of a lab capped at one is refused at apply", async () => {
    const refused = await apply(["a", "b"], 1);
    expect(refused.code, refused.stdout + refused.stderr).not.toBe(0);
    expect(refused.stdout + refused.stderr).toMatch(/envelope\.seats/);
    expect(refused.stdout + refused.stderr).toMatch(/declares 2 seat\(s\) of lab anthropic \(a, b\) and the ceiling caps it at 1/);
  });

  it("a launch while the lab's one place is taken is refused, a seat renamed away still counting; a stop makes room", async () => {
    expect((await apply(["a"], 1)).code).toBe(0);
    await h.ok(["start", "a"]);
    // The owner renames a to c: the file declares one seat, within the cap; a still runs.
    expect((await apply(["c"], 1)).code).toBe(0);
    expect(await running()).toEqual(["a"]);
    await expectRefused(h.run(["start", "c"]), "envelope.seats");
    expect(await running()).toEqual(["a"]);
    // Status says it: the lab's cap, its live seats (a counted as the lab it launched as), none left.
    const status = JSON.parse(await h.ok(["status", "--json"])) as { teams: { envelope: unknown[] }[]; seats: { seat: string; lab: string }[] };
    expect(status.teams[0]?.envelope).toEqual([{ lab: "anthropic", seats: { cap: 1, live: 1, left: 0 }, visibility: null }]);
    expect(status.seats.map((s) => [s.seat, s.lab])).toEqual([["a", "anthropic"]]);
    expect(await h.ok(["status"])).toContain("envelope: anthropic seats 1 of 1 live (0 left)");
    await h.ok(["stop", "a@proj"]);
    await h.ok(["start", "c"]);
    expect(await running()).toEqual(["c"]);
    // Control: without the cap, two seats of the lab run side by side.
    expect((await apply(["c", "d"], undefined)).code).toBe(0);
    await h.ok(["start", "d"]);
    expect(await running()).toEqual(["c", "d"]);
    await h.ok(["stop", "--team", "proj"]);
    // A team's stop holds (§9, §15) until the owner resumes it.
    await h.ok(["resume", "--team", "proj"]);
  }, 120_000);
});
