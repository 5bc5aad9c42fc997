import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { teamFile } from "../support/team-file.js";
import { createHarness, expectRefused, type TeamdHarness } from "../support/teamd-harness.js";
import { chownTreeToNobody, NOBODY } from "../support/ordinary-owner.js";

/**
 * The envelope's runtime at its limit for a seat with no cgroup of its own (§8; issue 27): a
 * user-mode daemon (an ordinary owner: as root, the test runs it as nobody) gives its seats no
 * v2 cgroup, so a paused seat cannot stand frozen — it is halted: its run ends `suspended`, never
 * restarted by its restart policy, into the handoff checkpoint the host builds (its acts by
 * record, its note as a hypothesis, the envelope at the halt: no runtime left), and the owner is
 * told once. An owner-issued lease before the limit renews nothing: the halt lands on time. (envelope-runtime.test.ts is the frozen case, as root.)
 */
const asRoot = process.getuid?.() === 0;
// Long enough for the setup, the note and the lease to land before the limit on a loaded machine.
const RUNTIME_S = 15;

const TEAM_FILE = teamFile(`  w:
    lab: anthropic
    capabilities:
      read: ~
      write: { path: src/ }
    start:
      command: [sleep, "3600"]
      restart: always
  l:
    lab: anthropic
    roles: [observer]
`).replace("seats:\n", `leads:\n  seat: l\n  envelope: { read: { path: [src/] } }\nceiling:\n  runtime: ${RUNTIME_S}s\nseats:\n`);

interface Handoff {
  run: { state: string; haltedBy: string; reason: string };
  facts: { acts: { list: { action: string }[] }; envelope: { runtime: { limitMs: number; leftMs: number } | null } };
  hypotheses: { notes: { note: string }[] };
}

describe.runIf(process.platform === "linux")("a paused seat with no cgroup to freeze is halted into a handoff (§8)", () => {
  let h: TeamdHarness;
  let appliedAt = 0;

  beforeAll(async () => {
    h = await createHarness("teamd-runtime-halt-", {
      owner: asRoot ? { uid: NOBODY, gid: NOBODY } : {},
      files: { "README.md": "hello\n", "src/a.txt": "a\n" },
    });
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE);
    if (asRoot) chownTreeToNobody(h.dir);
    await h.startDaemon();
    await h.ok(["init", "--yes", "--json"]);
    await h.ok(["apply", "--yes"]);
    appliedAt = Date.now();
    await h.ok(["start", "w"]);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("halts the seat at the limit into a suspended run with its handoff, told once, never restarted", async () => {
    const status = JSON.parse(await h.ok(["status", "--json"])) as { seats: { seat: string; cgroup: string }[] };
    // The control: this seat has no v2 cgroup of its own (else it would be frozen, not halted).
    expect(status.seats.find((s) => s.seat === "w")?.cgroup).toMatch(/^none/);
    const noted = await h.shim("w", "checkpoint", "tests pass; next: the docs");
    expect(noted.code, `${noted.stderr}\n${h.daemon?.stderr().slice(-2500) ?? ""}`).toBe(0);
    // An owner-issued lease is an owner act, and renews nothing (§8): the pause still lands on time.
    const lease = await h.run(["lease", "issue", "w@proj", "read", "path=src/", "--ttl", "1h"]);
    expect(lease.code, lease.stderr).toBe(0);
    await sleep(Math.max(0, appliedAt + RUNTIME_S * 1000 + 2500 - Date.now()));
    let handoff: Handoff | { checkpoint: null } = { checkpoint: null };
    for (let i = 0; i < 40 && "checkpoint" in handoff; i++) {
      handoff = JSON.parse(await h.ok(["checkpoint", "show", "w", "--json"])) as Handoff | { checkpoint: null };
      if ("checkpoint" in handoff) await sleep(250);
    }
    expect("run" in handoff).toBe(true);
    const halted = handoff as Handoff;
    expect(halted.run).toMatchObject({ state: "suspended", haltedBy: "bound" });
    expect(halted.run.reason).toMatch(/runtime spent/);
    expect(halted.facts.envelope.runtime).toEqual({ limitMs: RUNTIME_S * 1000, leftMs: 0, renewedAt: expect.any(String) as string });
    expect(halted.facts.acts.list.map((a) => a.action)).toContain("seat.checkpoint");
    expect(halted.hypotheses.notes.map((n) => n.note)).toEqual(["tests pass; next: the docs"]);
    const stops = (await h.records<{ type: string; fields?: Record<string, string> }>("--seat", "w")).filter((r) => r.type === "seat_stop");
    expect(stops.at(-1)?.fields).toMatchObject({ run_state: "suspended", stopped_by: "bound" });
    // Never restarted by restart: always, and a start is refused while paused.
    await sleep(2_500);
    const after = JSON.parse(await h.ok(["status", "--json"])) as { seats: { seat: string; state: string }[] };
    expect(after.seats.filter((s) => s.seat === "w" && s.state === "running")).toEqual([]);
    await expectRefused(h.run(["start", "w"]), "envelope.runtime");
    const notices = (await h.records<{ type: string; detail?: { subject?: string } }>()).filter(
      (r) => r.type === "notice" && r.detail?.subject === "runtime spent (team proj): paused",
    );
    expect(notices).toHaveLength(1);
  }, 60_000);
});
