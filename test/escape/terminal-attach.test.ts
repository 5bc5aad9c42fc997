import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { ControlService } from "../../src/gen/teamd/v1/control_pb.js";
import { AsyncQueue } from "../../src/rpc/async-queue.js";
import { createRpcClient } from "../../src/rpc/index.js";
import { appliedTeam } from "../support/applied-team.js";
import { cliTerminals } from "../support/cli-terminal.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import type { LogRecord, TeamdHarness } from "../support/teamd-harness.js";

/**
 * Proves (docs/enforcement.md, "Terminal text"): a seat cannot write past the screen of the
 * owner's terminal through `teamd attach`, live or in the replayed scrollback — no clipboard
 * write (OSC 52), no hyperlink (OSC 8), no query whose answer the terminal would type (CSI 6n,
 * CSI 21t: the title report), no passthrough (DCS) — while its screen control (colours, the
 * alternate screen) still passes; and on detach the terminal is left as it was (alternate
 * screen off, cursor shown). A real seat started by a real daemon writes the sequences into its
 * own pty, before the owner attaches (scrollback) and after (live); the owner's CLI runs in a
 * pty as a person's terminal would. Control: the daemon relays those bytes as they are (a raw
 * attach over the control socket shows them), so the CLI's filter is what stops them.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

// Printed by the seat's command: sh's printf turns \033 into ESC; in YAML's single quotes backslashes are literal.
const BEFORE = String.raw`\033]52;c;U0NST0xMQkFDSw==\007\033[6n\033P\$qm\033\\\\\033[1;32mSCROLLBACK-MARK\033[0m\n`;
const LIVE = String.raw`\033%%@\033[2h\033[12h\033[?1049h\033[?25l\033]52;c;TElWRQ==\007\033]8;;https://evil.example/\033\\\\LINKTEXT\033]8;;\033\\\\\033[21tLIVE-%s\n`;
const TEAM_FILE = teamFile(`  painter:
    lab: anthropic
    roles: [observer]
    start:
      command: [sh, -c, 'printf "${BEFORE}"; while read line; do printf "${LIVE}" "$line"; done']
`);

describe.runIf(process.platform === "linux")("escape: a seat's pty cannot write past the owner's screen through teamd attach", () => {
  let h: TeamdHarness;
  const terminals = cliTerminals(() => h);
  beforeAll(async () => {
    h = await appliedTeam("teamd-attach-escape-", TEAM_FILE);
    await h.ok(["start", "painter@proj"]);
  }, 90_000);
  afterEach(() => terminals.closeAll());
  afterAll(async () => {
    await h?.cleanup();
  });

  it("control: the daemon relays the seat's sequences raw (scrollback and live)", async () => {
    const client = createRpcClient(ControlService, join(h.home, "run/control.sock"), { deadlineMs: 15_000, streamDeadlineMs: 30_000 });
    type In = Parameters<typeof client.attach>[0] extends AsyncIterable<infer I> ? I : never;
    const queue = new AsyncQueue<In>();
    queue.push({ input: { case: "open", value: { team: "proj", seat: "painter", size: { cols: 100, rows: 30 } } } });
    let raw = "";
    try {
      for await (const reply of client.attach(queue.drain())) {
        if (reply.output.case === "ready") queue.push({ input: { case: "keys", value: Buffer.from("raw\r") } });
        if (reply.output.case === "data") raw += Buffer.from(reply.output.value).toString("latin1");
        if (raw.includes("LIVE-raw")) break;
      }
    } finally {
      queue.close();
      client.close();
    }
    expect(raw).toContain("\x1b]52;c;U0NST0xMQkFDSw==\x07");
    expect(raw).toContain("\x1b]52;c;TElWRQ==\x07");
    expect(raw).toContain("\x1b[6n");
    expect(raw).toContain("\x1b]8;;https://evil.example/");
    expect(raw).toContain("\x1b[21t");
    expect(raw).toContain("\x1bP$qm");
    expect(raw).toContain("\x1b%@\x1b[2h\x1b[12h");
  }, 40_000);

  it("the owner's terminal gets the screen control and none of the rest, scrollback and live; detach leaves it as it was", async () => {
    const t = terminals.open(["attach", "painter@proj"]);
    await t.waitFor("SCROLLBACK-MARK"); // the scrollback, replayed
    t.write("owner\r");
    await t.waitFor("LIVE-owner");
    t.write("\x1d");
    expect(await t.exit).toBe(0);
    const out = t.output();
    for (const forbidden of ["\x1b%@", "\x1b[2h", "\x1b[12h", "\x1b]52", "U0NST0xMQkFDSw", "TElWRQ", "\x1b]8;", "evil.example", "\x1b[6n", "\x1b[21t", "\x1bP"])
      expect(out, JSON.stringify(forbidden)).not.toContain(forbidden);
    // Screen control passes: the colour, the alternate screen, the hidden cursor, the link's text.
    expect(out).toContain("\x1b[1;32mSCROLLBACK-MARK");
    expect(out).toContain("\x1b[?1049h");
    expect(out).toContain("LINKTEXT");
    // Detach undoes the seat's modes, after the last of its output.
    const after = out.slice(out.lastIndexOf("LIVE-owner"));
    expect(after).toContain("\x1b[?1049l");
    expect(after).toContain("\x1b[?25h");
    expect(out).toMatch(/dropped what reached beyond the screen[^\n]*osc 52 ×\d/);
  }, 40_000);

  it("teamd exec to the owner's terminal shows every control escaped; to a pipe it passes the bytes as they are (the control)", async () => {
    const script = String.raw`printf "\033]52;c;RVhFQw==\007\033[6nEXEC-MARK\033[2K\rhidden\n"`;
    const t = terminals.open(["exec", "painter@proj", "--", "sh", "-c", script]);
    expect(await t.exit).toBe(0);
    const out = t.output();
    expect(out).toContain("EXEC-MARK");
    expect(out).not.toContain("\x1b]52");
    expect(out).not.toContain("\x1b[6n");
    expect(out).toContain(String.raw`\x1b]52;c;RVhFQw==\x07\x1b[6nEXEC-MARK\x1b[2K\rhidden`);
    // Control: the same exec into a pipe (a script's use) gets the seat's bytes unchanged.
    const piped = await h.run(["exec", "painter@proj", "--", "sh", "-c", script]);
    expect(piped.stdout).toContain("\x1b]52;c;RVhFQw==\x07");
  }, 40_000);

  it("a branch name carrying C1 controls (git allows them) is refused git.ref-name and reaches teamd log escaped, the record holding it as sent (the control); a task resource name carrying OSC 52 is refused off the record", async () => {
    const task = await h.sh("painter", String.raw`teamd-shim broker read "$(printf 'gh:x\033]52;c;VEFTSw==\007\033[2K')" 1 2>&1; echo rc=$?`);
    expect(task.stdout).toMatch(/rc=[1-9]/);
    const branch = await h.sh(
      "painter",
      String.raw`git -c user.name=p -c user.email=p@p commit -q --allow-empty -m x && git push teamd "HEAD:refs/heads/$(printf 'b\302\2336n\302\235')" 2>&1; echo rc=$?`,
    );
    // git allows C1 code points in a ref name; the daemon refuses them, on record under the name the seat chose.
    expect(branch.stdout).toMatch(/git\.ref-name/);
    expect(branch.stdout).toMatch(/rc=[1-9]/);
    const records = await h.records<LogRecord>();
    // The task resource is refused before it is a target (nothing of it is on record); the branch is.
    expect(records.some((r) => r.type === "refusal" && r.action === "broker.read")).toBe(true);
    expect(records.some((r) => String(r.target ?? "").includes("b\u009b6n\u009d"))).toBe(true);
    const shown = await h.ok(["log"]);
    expect(shown).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(shown).toContain("b\\x9b6n\\x9d");
  }, 40_000);

  it("a pushed commit whose message or author would drive the terminal of whoever runs git log is refused push.commit-text; the same commit clean lands (the control)", async () => {
    const push = (name: string, message: string, author = "p") =>
      h.sh(
        "painter",
        // Each on the branch the seat started from, so no refused commit is under another.
        String.raw`git checkout -q --detach "$(git rev-parse seat/painter/main)" && git -c user.name="$(printf '${author}')" -c user.email=p@p commit -q --allow-empty -m "$(printf '${message}')" && git push teamd "HEAD:refs/heads/${name}" 2>&1; echo rc=$?`,
      );
    const osc = await push("msg-osc", String.raw`fix\033]52;c;TE9H\007`);
    expect(osc.stdout).toMatch(/push\.commit-text/);
    const hidden = await push("msg-cr", String.raw`harmless\rrm -rf ~`);
    expect(hidden.stdout).toMatch(/push\.commit-text/);
    const author = await push("author-esc", "ok", String.raw`p\033[2K`);
    expect(author.stdout).toMatch(/push\.commit-text/);
    const refs = h.hubGit("for-each-ref", "--format=%(refname)");
    for (const name of ["msg-osc", "msg-cr", "author-esc"]) expect(refs).not.toContain(`seat/painter/${name}`);
    // Control: a clean commit on the same path lands.
    const clean = await push("msg-clean", "a plain message");
    expect(clean.stdout, clean.stdout).toMatch(/rc=0/);
    expect(h.hubGit("for-each-ref", "--format=%(refname)")).toContain("refs/heads/seat/painter/msg-clean");
  }, 60_000);
});
