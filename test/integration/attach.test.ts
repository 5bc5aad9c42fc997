import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { cliTerminals } from "../support/cli-terminal.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { appliedTeam } from "../support/applied-team.js";
import type { TeamdHarness } from "../support/teamd-harness.js";
import { filesUnder } from "../support/files-under.js";

/**
 * `teamd attach` and streaming `teamd exec` end to end (issue 7): a real daemon, a real seat
 * in a pty under bubblewrap, and the owner's CLI itself run in a pty (node-pty) as a person's
 * terminal would run it. Checks the scrollback, keystrokes both ways, the window size, the
 * detach key, one attacher at a time, the records (attach and detach, never the content:
 * canaries typed and printed are found nowhere under TEAMD_HOME), and a refusal without a tty.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const TYPED = "typed-canary-6f1e";
const PRINTED = "printed-canary-93ab";

const TEAM_FILE = teamFile(`  talker:
    lab: anthropic
    roles: [observer]
    start:
      command: [sh, -c, 'echo BANNER-START; while read line; do if [ "$line" = size ]; then stty size; else echo "got:$line"; fi; done']
  brief:
    lab: anthropic
    roles: [observer]
    start:
      command: [sh, -c, 'echo ready-to-end; read x; echo bye; exit 3']
`);

describe.runIf(process.platform === "linux")("attach and streaming exec through a real daemon", () => {
  let h: TeamdHarness;
  const terminals = cliTerminals(() => h);
  const terminal = (args: string[]) => terminals.open(args);

  beforeAll(async () => {
    h = await appliedTeam("teamd-attach-", TEAM_FILE);
    await h.ok(["start", "talker@proj"]);
  }, 90_000);
  afterEach(() => terminals.closeAll());
  afterAll(async () => {
    await h?.cleanup();
  });

  it("exec -t runs a command in a pty of its own: a prompt answered from our terminal, the window size, its exit code ours; recorded as a pty exec", async () => {
    const t = terminal(["exec", "-t", "talker@proj", "--", "sh", "-c", 'printf "name? "; read x; echo "hi $x, $(stty size)"; exit 4']);
    await t.waitFor("name? ");
    t.write("bob\r");
    await t.waitFor(/hi bob, \d+ \d+/);
    expect(await t.exit).toBe(4);
    const execs = (await h.records<{ action: string; fields?: Record<string, string> }>()).filter((r) => r.action === "seat.exec" && r.fields?.tty === "pty");
    expect(execs.length).toBeGreaterThanOrEqual(1);
    // Ctrl-] leaves and the command is killed (it would wait forever).
    const held = terminal(["exec", "-t", "talker@proj", "--", "sh", "-c", "echo waiting; exec sleep 600"]);
    await held.waitFor("waiting");
    held.write("\x1d");
    expect(await held.exit).toBe(130);
    // Without a terminal: a usage error that names the way without one.
    const piped = await h.run(["exec", "-t", "talker@proj", "--", "true"]);
    expect(piped.code).toBe(2);
    expect(piped.stderr).toMatch(/needs a terminal/);
  });

  it("replays the scrollback, relays keys and the window size both ways, and detaches on Ctrl-]", async () => {
    const t = terminal(["attach", "talker@proj"]);
    await t.waitFor("detach with Ctrl-]");
    await t.waitFor("BANNER-START"); // the scrollback: printed before anyone attached
    t.write(`${TYPED}\r`);
    await t.waitFor(`got:${TYPED}`);
    t.write(`echo-${PRINTED}\r`);
    await t.waitFor(`got:echo-${PRINTED}`);
    t.resize(77, 21);
    // SIGWINCH reaches the client; the new size reaches the seat's pty.
    await new Promise((resolve) => setTimeout(resolve, 300));
    t.write("size\r");
    await t.waitFor("21 77");
    t.write("\x1d");
    expect(await t.exit).toBe(0);
    expect(t.output()).toMatch(/detached from talker@proj/);
    // The seat is still running after the detach, and its input still works next time.
    const again = terminal(["attach", "talker@proj"]);
    await again.waitFor("detach with Ctrl-]");
    await again.waitFor(`got:${TYPED}`); // the scrollback now holds the first session
    again.write("\x1d");
    expect(await again.exit).toBe(0);
  });

  it("records each attach and detach as owner acts, and none of the content anywhere under TEAMD_HOME", async () => {
    const log = await h.run(["log", "--json"]);
    const records = log.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { action?: string });
    const attaches = records.filter((r) => r.action === "seat.attach").length;
    const detaches = records.filter((r) => r.action === "seat.detach").length;
    expect(attaches).toBeGreaterThanOrEqual(2);
    expect(detaches).toBe(attaches);
    expect(log.stdout).not.toContain(TYPED);
    // Control: the canaries are real bytes the daemon handled (shown to the attacher above);
    // now no file under TEAMD_HOME (ledger, its WAL, the daemon's state) holds them — except the
    // seat's own output log (TEAMD_HOME/logs, the owner's to read: teamd logs), which keeps what
    // its terminal printed, issue 22. The ledger never does.
    const logs = join(h.home, "logs");
    const holders = filesUnder(h.home).filter((path) => {
      const bytes = readFileSync(path);
      return bytes.includes(TYPED) || bytes.includes(PRINTED);
    });
    expect(holders.filter((path) => !path.startsWith(`${logs}/`))).toEqual([]);
    expect(holders.some((path) => path.startsWith(join(logs, "proj", "talker")) && readFileSync(path).includes(PRINTED))).toBe(true);
  });

  it("lets one owner attach at a time: a second is refused seat.attached, and may attach after the first detaches", async () => {
    const first = terminal(["attach", "talker@proj"]);
    await first.waitFor("detach with Ctrl-]");
    const second = terminal(["attach", "talker@proj"]);
    expect(await second.exit).toBe(3);
    expect(second.output()).toMatch(/seat\.attached/);
    first.write("\x1d");
    expect(await first.exit).toBe(0);
    const third = terminal(["attach", "talker@proj"]);
    await third.waitFor("detach with Ctrl-]");
    third.write("\x1d");
    expect(await third.exit).toBe(0);
  });

  it("ends the attachment when the seat's command ends, saying how, and the seat is torn down", async () => {
    const started = await h.run(["start", "brief@proj"]);
    expect(started.code, started.stderr).toBe(0);
    const t = terminal(["attach", "brief@proj"]);
    await t.waitFor("ready-to-end");
    t.write("x\r");
    expect(await t.exit).toBe(0);
    expect(t.output()).toContain("bye");
    expect(t.output()).toMatch(/the seat's command ended \(exited 3\)/);
    const status = JSON.parse((await h.run(["status", "--json"])).stdout) as { seats: Array<{ seat: string }> };
    expect(status.seats.map((s) => s.seat)).not.toContain("brief");
    const log = await h.run(["log", "--json"]);
    const detach = log.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { action?: string; target?: string })
      .filter((r) => r.action === "seat.detach")
      .at(-1);
    // `teamd log` shows the act, not its fields (the fields say how: "the seat's command ended").
    expect(detach?.target).toBe("seat:brief");
  });

  it("refuses attach without a terminal, naming teamd exec", async () => {
    const result = await h.run(["attach", "talker@proj"]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/needs a terminal/);
    expect(result.stderr).toMatch(/teamd exec/);
  });

  it("streams exec output as it runs: the first line arrives while the command still runs", async () => {
    const t = terminal(["exec", "talker@proj", "--", "sh", "-c", "echo first-line; sleep 3; echo second-line; exit 5"]);
    await t.waitFor("first-line", 15_000);
    // Control for the streaming claim: at the moment the first line is shown, the second is not.
    expect(t.output()).not.toContain("second-line");
    expect(await t.exit).toBe(5);
    expect(t.output()).toContain("second-line");
  });

  it("`exec SEAT -- CMD`, taken straight to its act (daemon/main.ts), runs the words the command tree gives: a second `--` and option-like words are the command's", async () => {
    const command = ["sh", "-c", 'printf "[%s]" "$@"', "zero", "--", "--help", "-t", "--team"];
    const direct = await h.run(["exec", "talker@proj", "--", ...command]);
    expect(direct).toMatchObject({ code: 0, stdout: "[--][--help][-t][--team]" });
    // Control: the same through the command tree (--timeout 60 is the default).
    expect(await h.run(["exec", "talker@proj", "--timeout", "60", "--", ...command])).toMatchObject({ code: 0, stdout: direct.stdout });
  });

  it("keeps exec's stdout and stderr apart and its exit code", async () => {
    const result = await h.run(["exec", "talker@proj", "--", "sh", "-c", "echo out; echo err >&2; exit 7"]);
    expect(result).toMatchObject({ code: 7, stdout: "out\n", stderr: "err\n" });
  });

  it("records an exec's argv with every key-shaped value redacted (length and hash), and the key is nowhere under TEAMD_HOME", async () => {
    const key = `sk-ant-api03-${"K9".repeat(20)}canary`;
    const result = await h.run(["exec", "talker@proj", "--", "sh", "-c", `echo ANTHROPIC_API_KEY=${key} > /dev/null; echo done`, `--key=${key}`]);
    expect(result).toMatchObject({ code: 0, stdout: "done\n" });
    // A whole argument of a command that writes nothing.
    expect((await h.run(["exec", "talker@proj", "--", "true", key])).code).toBe(0);
    const marker = /\[redacted Anthropic API key: \d+ chars, sha256 [0-9a-f]{12}\]/;
    // teamd log --json shows the argv as recorded (issue 22), redacted.
    const execs = (await h.records<{ action: string; fields?: Record<string, string> }>()).filter((r) => r.action === "seat.exec");
    const argvs = execs.map((r) => r.fields?.command ?? "");
    expect(argvs.filter((a) => marker.test(a)).length).toBeGreaterThanOrEqual(2);
    expect(argvs.some((a) => a.includes(key))).toBe(false);
    expect(filesUnder(h.home).some((path) => marker.test(readFileSync(path).toString("latin1")))).toBe(true);
    // Control: the key was a real argument the command ran with; no file under TEAMD_HOME (ledger, WAL, logs) holds it.
    expect(filesUnder(h.home).filter((path) => readFileSync(path).includes(key))).toEqual([]);
  });
});
