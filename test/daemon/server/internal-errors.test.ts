import { describe, expect, it } from "vitest";
import { createInternalErrorLog, INTERNAL_ERROR_LINE_BYTES } from "../../../daemon/server/internal-errors.js";

/** The daemon's log of internal errors: a seat can cause them, so neither a line nor their rate is unbounded. */
function setup() {
  let now = 0;
  const lines: string[] = [];
  const report = createInternalErrorLog(
    (line) => lines.push(line),
    () => now,
  );
  return { lines, report, advance: (ms: number) => void (now += ms) };
}

describe("the internal error log", () => {
  it("writes one line per error, with the method and the stack", () => {
    const { lines, report } = setup();
    report(new Error("boom"), "Push");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^internal error in Push: Error: boom\n {4}at /);
  });

  it("bounds a line that echoes a seat's long input, keeping its length and hash", () => {
    const { lines, report } = setup();
    const path = "a".repeat(200_000);
    report(new Error(`git ls-tree -- ${path} failed`), "FileRead");
    const line = lines[0] as string;
    expect(Buffer.byteLength(line)).toBeLessThanOrEqual(INTERNAL_ERROR_LINE_BYTES);
    expect(line).toMatch(/\d{6} bytes, sha256 [0-9a-f]{64}/);
    // Control: a short line is written whole.
    report("short", "Stat");
    expect(lines[1]).toBe("internal error in Stat: short");
  });

  it("past 60 at once, counts instead of writing, and says the count with the next line once the rate allows", () => {
    const { lines, report, advance } = setup();
    for (let i = 0; i < 1000; i++) report(`e${i}`, "Push");
    expect(lines).toHaveLength(60);
    advance(1000);
    report("later", "Push");
    expect(lines).toHaveLength(61);
    expect(lines[60]).toBe("internal error in Push: later (940 more internal errors were not written: past 60 a minute)");
    report("again", "Push");
    expect(lines).toHaveLength(61);
  });

  it("a steady rate under a second each is always written", () => {
    const { lines, report, advance } = setup();
    for (let i = 0; i < 300; i++) {
      report(`e${i}`, "Push");
      advance(1000);
    }
    expect(lines).toHaveLength(300);
    expect(lines.some((l) => l.includes("not written"))).toBe(false);
  });
});
