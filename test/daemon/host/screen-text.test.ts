import { describe, expect, it } from "vitest";
import { clampParameters, drawsScreen, readableLines, screenLines } from "../../../daemon/host/screen-text.js";

/**
 * A full-screen program's output read as its screen (daemon/host/screen-text.ts): replayed
 * through a terminal emulator, the frames an agent's UI draws in place come out as the screen
 * it left, where stripping the escapes runs the frames' fragments together.
 */
const enc = (s: string) => Buffer.from(s, "utf8");
const size = { cols: 40, rows: 10 };

describe("screen text", () => {
  it("a UI drawn on the alternate screen and redrawn in place reads as its last frame", async () => {
    const frames =
      "\u001b[?1049h\u001b[2J\u001b[H" +
      "\u001b[1;1HWorking\u2026 step 1\u001b[3;1H> prompt" +
      "\u001b[1;1H\u001b[2KDone: all steps\u001b[5;3H\u001b[1mbold\u001b[22m";
    const { lines } = await readableLines(enc(frames), size);
    expect(lines).toEqual(["Done: all steps", "", "> prompt", "", "  bold"]);
    // The control: stripped line by line, the same bytes run the frames together.
    const { plainLines } = await import("../../../daemon/host/plain-text.js");
    expect(plainLines(enc(frames)).join("\n")).not.toBe(lines.join("\n"));
  });

  it("line-oriented output (colours, a progress line) stays line by line, every line kept", async () => {
    const text = "one\n\u001b[31mtwo\u001b[0m\nprogress 10%\rprogress 100%\n";
    expect(drawsScreen(enc(text))).toBe(false);
    expect((await readableLines(enc(text), size)).lines).toEqual(["one", "two", "progress 100%"]);
  });

  it("what scrolled off a normal screen is kept (scrollback), in order", async () => {
    const many = Array.from({ length: 30 }, (_, i) => `line ${i}`).join("\r\n");
    const lines = await screenLines(enc(`\u001b[H${many}`), size);
    expect(lines?.[0]).toBe("line 0");
    expect(lines?.at(-1)).toBe("line 29");
    expect(lines).toHaveLength(30);
  });

  it("a repeat of a billion characters costs what one screen line costs (parameters clamped)", async () => {
    const hostile = enc("\u001b[?1049hx\u001b[999999999b\u001b[999999999;999999999Hy\u001b[999999999@");
    expect(clampParameters(hostile, 40).toString("latin1")).toBe("\u001b[?1049hx\u001b[40b\u001b[40;40Hy\u001b[40@");
    // A control inside the parameters (an emulator executes it and reads on) does not hide the digits after it.
    expect(clampParameters(enc("\u001b[\u00072147483647S\u001b[1\u007f99999T"), 40).toString("latin1")).toBe("\u001b[40S\u001b[40T");
    // ESC, CAN and SUB end a sequence: what follows is not taken as its parameters.
    expect(clampParameters(enc("\u001b[\u001b[999999S"), 40).toString("latin1")).toBe("\u001b[\u001b[40S");
    const lines = await screenLines(hostile, size, 10_000);
    expect(lines?.[0]).toBe("x".repeat(size.cols));
    expect(lines?.length).toBeLessThanOrEqual(size.rows);
  });

  it("a replay built to be slow is given up at its budget, and read line by line instead", async () => {
    const slow = enc("\u001b[?1049h" + "\u001b[40S".repeat(400_000) + "\u001b[Hlast words");
    expect(await screenLines(slow, size, 200)).toBeUndefined();
    const started = performance.now();
    const read = await readableLines(slow, size);
    expect(performance.now() - started).toBeLessThan(30_000);
    expect(read.note ?? read.lines.join("")).toMatch(/line by line|last words/);
  });
});
