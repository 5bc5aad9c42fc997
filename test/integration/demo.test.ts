import { spawn } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../support/programs.js";

/**
 * `npm run demo` is the main job: it runs here as a whole (real daemon, real bwrap seats, a
 * scratch repository) and its output is checked for the lines that say the mission held —
 * refusals named by their rules, the escape stopped, the merge done, the machine-wide stop,
 * verify ok — and for no stack trace.
 */
function runDemo(): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(ROOT, "dist/scripts/demo.js")], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (out += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 280_000);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

describe.runIf(process.platform === "linux")("the demo", () => {
  it("runs every step as expected and says so", async () => {
    const { code, out } = await runDemo();
    expect(out, out).toMatch(/\ndemo: ok\n/);
    expect(code).toBe(0);
    expect(out).not.toMatch(/!! unexpected/);
    expect(out).not.toMatch(/\n\s+at .+:\d+:\d+\)?\n/); // no stack trace
    expect(out).toMatch(/channel\.control-on-seat/);
    expect(out).toMatch(/remote rejected\].*teamd: scope\.path/);
    expect(out).toMatch(/remote rejected\].*teamd: reserved\.object/);
    expect(out).toMatch(/network: ENETUNREACH/);
    expect(out).toMatch(/^version 2$/m); // the owner pulled the merged trunk
    expect(out).toMatch(/refused by stop\.active/);
    expect(out).toMatch(/^resumed: /m);
    expect(out).toMatch(/\$ teamd verify\nok: \d+ records/);
  }, 300_000);
});
