import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { createHarness, type TeamdHarness } from "../support/teamd-harness.js";
import { FAILED_START_WINDOW } from "../support/programs.js";

/**
 * A seat's output kept, and a start that tells the truth (issue 22, items 1 and 2), through a
 * real daemon and real bwrap seats: a command that ends at once makes `teamd start` fail with
 * its exit and last lines; a command outside the seat's view is named as such, with where it
 * is on the host; a folder the seat's uid cannot traverse is named with its mode (root only);
 * `teamd logs` shows what a seat printed, as plain text, after it ended; the output is never
 * in the ledger. The team file applied here holds `network: { lab: false }`, which apply
 * refused before (owner.act-invalid).
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

// Made by the seat's command, so the command line (which seat_start records) never holds it whole.
const OUTPUT_CANARY = "output-canary-4d1f0a";

const TEAM_FILE = teamFile(`  quick:
    lab: anthropic
    roles: [observer]
    start:
      command: [sh, -c, "echo starting up; echo 'Unable to connect to Anthropic services' >&2; exit 1"]
  late:
    lab: anthropic
    roles: [observer]
    start:
      command: [sh, -c, "sleep 3; echo gave up; exit 4"]
  ghost:
    lab: anthropic
    roles: [observer]
    start:
      command: [teamd-no-such-agent]
  hidden:
    lab: anthropic
    roles: [observer]
    start:
      command: [teamd-hidden-agent]
  offline:
    lab: anthropic
    roles: [observer]
    start:
      command: [sleep, "3600"]
      network: { lab: false, allow: [] }
  chatty:
    lab: anthropic
    roles: [observer]
    start:
      command: [sh, -c, "echo seat-wrote > /tmp/from-seat; echo line one; echo line two; printf '\\\\033[31mred %s-%s\\\\033[0m\\\\n' output-canary 4d1f0a; printf 'progress 10%%\\\\rprogress 100%%\\\\n'; exec sleep 3600"]
`);

describe.runIf(process.platform === "linux")("a seat's output and a truthful start", () => {
  let h: TeamdHarness;
  let tools: string;

  beforeAll(async () => {
    h = await createHarness("teamd-output-");
    // An agent installed on the host where the seat cannot see it (as under ~/.local/bin or nvm).
    tools = join(h.dir, "host-tools");
    mkdirSync(tools, { recursive: true });
    writeFileSync(join(tools, "teamd-hidden-agent"), "#!/bin/sh\necho hidden\n", { mode: 0o755 });
    await h.startDaemon({ env: { ...FAILED_START_WINDOW, PATH: `${tools}:${process.env.PATH ?? "/usr/bin:/bin"}` } });
    await h.ok(["init", "--yes", "--json"]);
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE);
    await h.ok(["apply", "--yes"]);
  }, 60_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("a command that ends at once fails the start, with its exit and its last lines", async () => {
    const r = await h.run(["start", "quick"]);
    expect(r.code, r.stdout).toBe(3);
    expect(r.stdout).not.toMatch(/started/);
    expect(r.stderr).toMatch(/seat\.start-failed/);
    expect(r.stderr).toMatch(/ended \(exit 1\) within 2 s/);
    expect(r.stderr).toMatch(/Unable to connect to Anthropic services/);
    expect(r.stderr).toMatch(/teamd logs quick@proj/);
    const json = await h.json<{ rule: string; reason: string }>(["start", "quick", "--json"], { code: 3 });
    expect(json.rule).toBe("seat.start-failed");
    // Nothing is left running.
    const status = await h.json<{ seats: Array<{ seat: string }>; lastRuns: Array<{ seat: string; state: string; exitCode?: number; lastLines: string[] }> }>([
      "status",
      "--json",
    ]);
    expect(status.seats.map((s) => s.seat)).not.toContain("quick");
    expect(status.lastRuns.find((r) => r.seat === "quick")).toMatchObject({ state: "ended", exitCode: 1 });
    expect(status.lastRuns.find((r) => r.seat === "quick")?.lastLines.join("\n")).toMatch(/Unable to connect/);
    expect(await h.ok(["status"])).toMatch(/quick@proj\s+ended \(exit 1\)/);
  });

  it("a command that is not in the seat's view is named so, with where it is on the host", async () => {
    const ghost = await h.run(["start", "ghost"]);
    expect(ghost.code).toBe(3);
    expect(ghost.stderr).toMatch(/'teamd-no-such-agent' is not in the seat's view/);
    expect(ghost.stderr).toMatch(/not on the host's PATH either/);
    const hidden = await h.run(["start", "hidden"]);
    expect(hidden.code).toBe(3);
    expect(hidden.stderr).toMatch(/'teamd-hidden-agent' is not in the seat's view/);
    expect(hidden.stderr).toContain(`on the host it is ${join(tools, "teamd-hidden-agent")}`);
    expect(hidden.stderr).toMatch(/install it under \/usr or \/usr\/local/);
  });

  it("teamd logs shows what the seat printed, plain, while it runs and after it stopped; never in the ledger", async () => {
    await h.ok(["start", "chatty"]);
    const live = await h.ok(["logs", "chatty"]);
    expect(live).toContain("line one\nline two\n");
    // Escapes dropped (not escaped), a carriage return keeps its last state.
    expect(live).toContain(`red ${OUTPUT_CANARY}\n`);
    expect(live).not.toContain("\u001b");
    expect(live).toContain("progress 100%\n");
    expect(live).not.toContain("progress 10%");
    // An exec sees what the seat's own command wrote to its /tmp (one /tmp per run).
    expect(await h.exec("chatty", ["cat", "/tmp/from-seat"])).toMatchObject({ code: 0, stdout: "seat-wrote\n" });
    await h.ok(["stop", "chatty"]);
    const after = await h.run(["logs", "chatty@proj", "-n", "2"]);
    expect(after.code, after.stderr).toBe(0);
    expect(after.stdout).toBe(`red ${OUTPUT_CANARY}\nprogress 100%\n`);
    expect(after.stderr).toMatch(/stopped by the owner/);
    const json = await h.json<{ run: { state: string; stoppedBy: string; hmac: string; bytes: number }; lines: string[] }>(["logs", "chatty", "--json"]);
    expect(json.run).toMatchObject({ state: "stopped", stoppedBy: "owner" });
    expect(json.lines).toContain("line two");
    const runs = await h.json<{ runs: Array<{ runId: string }> }>(["logs", "chatty", "--runs", "--json"]);
    expect(runs.runs).toHaveLength(1);
    // The raw bytes, to a pipe, escapes and all.
    expect((await h.ok(["logs", "chatty", "--raw"])).includes("\u001b[31m")).toBe(true);
    // The seat_stop record carries the output's size and hash, never the output.
    const stops = (await h.records()).filter((r) => r.type === "seat_stop");
    const stop = stops.find((r) => JSON.stringify(r).includes(json.run.hmac));
    expect(stop, JSON.stringify(stops)).toBeDefined();
    const ledgerDir = join(h.home, "ledger");
    for (const name of readdirSync(ledgerDir)) {
      const path = join(ledgerDir, name);
      if (statSync(path).isFile()) expect(readFileSync(path).includes(OUTPUT_CANARY), name).toBe(false);
    }
  });

  it("teamd log SEAT answers with the word for a seat's output; a bad -n or --run is a usage error", async () => {
    const wrong = await h.run(["log", "chatty"]);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/teamd logs chatty/);
    expect((await h.run(["logs", "chatty", "-n", "many"])).code).toBe(2);
    expect((await h.run(["logs", "chatty", "--run", "../../etc"])).code).not.toBe(0);
  });

  it("apply and status name a running seat whose start the new policy changed (it takes effect at its next start)", async () => {
    await h.ok(["start", "chatty"]);
    writeFileSync(
      join(h.repo, "teamd.yaml"),
      TEAM_FILE.replace(
        '    start:\n      command: [sh, -c, "echo seat-wrote',
        '    start:\n      env: { NOTE: changed }\n      command: [sh, -c, "echo seat-wrote',
      ),
    );
    const applied = await h.json<{ restartNeeded: string[] }>(["apply", "--yes", "--json"]);
    expect(applied.restartNeeded).toEqual(["chatty"]);
    const status = await h.json<{ seats: Array<{ seat: string; startChanged: string | null }> }>(["status", "--json"]);
    expect(status.seats.find((s) => s.seat === "chatty")?.startChanged).toMatch(/another start/);
    expect(await h.ok(["status"])).toMatch(/RESTART NEEDED: .*teamd stop chatty@proj && teamd start chatty@proj/);
    await h.ok(["stop", "chatty"]);
    await h.ok(["start", "chatty"]);
    expect(
      (await h.json<{ seats: Array<{ seat: string; startChanged: string | null }> }>(["status", "--json"])).seats.find((s) => s.seat === "chatty")
        ?.startChanged,
    ).toBeNull();
    // Removed from the file while it runs: no restart brings it back, so apply and status say what does end it.
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE.slice(0, TEAM_FILE.indexOf("  chatty:")));
    const removed = await h.json<{ restartNeeded: string[]; removedRunning: string[] }>(["apply", "--yes", "--json"]);
    expect(removed).toMatchObject({ restartNeeded: [], removedRunning: ["chatty"] });
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE);
    await h.ok(["apply", "--yes"]);
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE.slice(0, TEAM_FILE.indexOf("  chatty:")));
    expect(await h.ok(["apply", "--yes"])).toMatch(/removed: chatty@proj still runs; teamd refuses its every act, and teamd stop chatty@proj ends it/);
    expect(await h.ok(["status"])).toMatch(/REMOVED: removed from the policy in force: teamd refuses its every act; it runs until teamd stop chatty@proj/);
    await h.ok(["stop", "chatty"]);
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE);
    await h.ok(["apply", "--yes"]);
  });

  it("the owner's TEAMD_START_SETTLE_MS sets the window (a command that ends after 3 s fails a start that watches 5 s); one the daemon cannot read stops its start, naming it", async () => {
    const env = { ...FAILED_START_WINDOW, PATH: `${tools}:${process.env.PATH ?? "/usr/bin:/bin"}` };
    await h.stopDaemon();
    try {
      await expect(h.startDaemon({ env: { ...env, TEAMD_START_SETTLE_MS: "2s" } })).rejects.toThrow(
        /TEAMD_START_SETTLE_MS is '2s'; it is a whole number of milliseconds/,
      );
      await h.startDaemon({ env: { ...env, TEAMD_START_SETTLE_MS: "5000" } });
      const r = await h.run(["start", "late"]);
      expect(r.code, r.stdout).toBe(3);
      expect(r.stderr).toMatch(/ended \(exit 4\) within 5 s/);
      expect(r.stderr).toMatch(/gave up/);
    } finally {
      await h.stopDaemon();
      await h.startDaemon({ env });
    }
  }, 60_000);

  it.runIf(asRoot)("a folder the seat's uid cannot traverse is named with its mode, before anything runs", async () => {
    chmodSync(h.dir, 0o700);
    try {
      const r = await h.run(["start", "chatty"]);
      expect(r.code).toBe(3);
      expect(r.stderr).toContain(`cannot traverse ${h.dir} (mode 0700`);
      expect(r.stderr).toMatch(/chmod o\+x/);
    } finally {
      chmodSync(h.dir, 0o711);
    }
    expect((await h.json<{ seats: Array<{ seat: string }> }>(["status", "--json"])).seats.map((s) => s.seat)).not.toContain("chatty");
  });
});
