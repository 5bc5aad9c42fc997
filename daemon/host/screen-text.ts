import { createRequire } from "node:module";
import type { Terminal as TerminalType } from "@xterm/headless";
import { plainLines } from "./plain-text.js";

/**
 * A seat's output as the screen showed it, for a person reading it outside a terminal
 * (`teamd logs`, `teamd status`). A line-oriented program's output reads well line by line
 * (plain-text.ts). A full-screen program — an agent's UI: the alternate screen, the cursor
 * moved to a row and column, a region redrawn in place — does not: stripped of its escapes it
 * is its frames' fragments run together. Such output is replayed through a terminal emulator
 * (xterm.js's headless build: a parser and screen model with no display, the one VS Code's
 * terminal uses) at the seat's pty size, and what is read is the screen at the end: the
 * normal buffer's scrollback and screen, then, when the program left the alternate screen on,
 * that screen. Bounded: the output is at most the run log's two parts, the scrollback a fixed
 * number of lines. This runs in the owner's command, never in the daemon.
 */

/** The size the daemon gives a seat's pty (daemon/lifecycle/manager.ts); an attach may resize it, which the log does not record. */
export const SEAT_PTY_SIZE = Object.freeze({ cols: 120, rows: 40 });

/** Scrollback kept while replaying: more than any `-n` a person reads, bounded whatever the seat wrote. */
const SCROLLBACK_LINES = 5_000;

// Moves the cursor to a row (CUP, HVP, VPA), up or down (CUU, CUD, CPL, CNL), or switches to the alternate screen.
const SCREEN_CONTROL = /\u001b\[(?:[0-9;]*[HfdABEF]|\?(?:47|1047|1049)h)/;

/** Whether the output draws a screen rather than writing lines. */
export function drawsScreen(output: Uint8Array | string): boolean {
  const text = typeof output === "string" ? output : Buffer.from(output.buffer, output.byteOffset, output.byteLength).toString("latin1");
  return SCREEN_CONTROL.test(text);
}

/** The output's lines as a person should read them: the final screen for a full-screen program, else plain lines. */
export async function readableLines(output: Uint8Array, size: { cols: number; rows: number } = SEAT_PTY_SIZE): Promise<{ lines: string[]; note?: string }> {
  if (!drawsScreen(output)) return { lines: plainLines(output) };
  const screen = await screenLines(output, size);
  if (screen !== undefined) return { lines: screen };
  return { lines: plainLines(output), note: `replaying this run's screen took longer than ${REPLAY_BUDGET_MS / 1000} s; shown line by line instead` };
}

/** How long a replay may take before it is given up (a seat's output is the seat's: it may be built to be slow). */
const REPLAY_BUDGET_MS = 5_000;
/** Fed in pieces of this size, the clock read between them. */
const REPLAY_CHUNK = 16 * 1024;

/**
 * The screen at the end of replaying `output`, trailing blanks trimmed; undefined when the
 * replay ran past its time budget. The seat wrote these bytes, so they are made cheap first:
 * every numeric parameter of a control sequence is clamped to the screen's larger side (a
 * count or a coordinate past it means nothing on this screen, and the emulator would act on
 * it: one `CSI 999999999 b` repeats a character a billion times, one `CSI 1000 S` scrolls a
 * thousand lines). Clamped, a piece of REPLAY_CHUNK bytes costs at most about a second (measured: 16 KiB of 120-line scrolls).
 */
export async function screenLines(output: Uint8Array, size: { cols: number; rows: number }, budgetMs = REPLAY_BUDGET_MS): Promise<string[] | undefined> {
  const cheap = clampParameters(output, Math.max(size.cols, size.rows));
  // The proposed API is the buffer (reading the screen back); nothing else of it is used.
  const terminal = new (loadTerminal())({ cols: size.cols, rows: size.rows, scrollback: SCROLLBACK_LINES, allowProposedApi: true });
  try {
    const started = performance.now();
    for (let at = 0; at < cheap.length; at += REPLAY_CHUNK) {
      await new Promise<void>((resolve) => terminal.write(cheap.subarray(at, at + REPLAY_CHUNK), resolve));
      if (performance.now() - started > budgetMs) return undefined;
    }
    // A program that left the alternate screen on shows it; what it wrote to the normal screen
    // before is shown too, first: the alternate screen must not hide it (found by an attack).
    const read = (buffer: typeof terminal.buffer.normal) => {
      const lines: string[] = [];
      for (let i = 0; i < buffer.length; i++) lines.push(buffer.getLine(i)?.translateToString(true) ?? "");
      while (lines.length > 0 && lines[lines.length - 1]?.trim() === "") lines.pop();
      while (lines.length > 0 && lines[0]?.trim() === "") lines.shift();
      return lines;
    };
    const normal = read(terminal.buffer.normal);
    const lines = terminal.buffer.active.type === "alternate" ? [...normal, ...read(terminal.buffer.alternate)] : normal;
    return lines;
  } finally {
    terminal.dispose();
  }
}

// A CSI (7-bit, or the C1 code point in UTF-8) and its parameter bytes — with the C0 controls
// and DEL an emulator executes or skips inside a sequence while it goes on reading the same
// number (a BEL between `ESC [` and the digits hid them from a clamp that stopped there: found
// by an attack). ESC, CAN and SUB end a sequence, so they are not taken.
const CSI_PARAMETERS = /(\u001b\[|\u00c2\u009b)([\u0000-\u0017\u0019\u001c-\u003f\u007f]*)/g;
const C0_AND_DEL = /[\u0000-\u001f\u007f]/g;

/**
 * `output` with every number in a CSI's parameters at most `max` (worked on as latin1: bytes in,
 * bytes out), and the controls inside its parameters dropped. A private sequence's (`CSI ?
 * 1049 h`: a mode's number, not a count) numbers are left whole.
 */
export function clampParameters(output: Uint8Array, max: number): Buffer {
  const text = Buffer.from(output.buffer, output.byteOffset, output.byteLength).toString("latin1");
  const clamped = text.replace(CSI_PARAMETERS, (_all, intro: string, raw: string) => {
    const params = raw.replace(C0_AND_DEL, "");
    return intro + (/^[<=>?]/.test(params) ? params : params.replace(/\d+/g, (n) => (n.length > 6 || Number(n) > max ? String(max) : n)));
  });
  return Buffer.from(clamped, "latin1");
}

/** Loaded on use (the package is CommonJS; only `teamd logs` needs it; require caches it). */
function loadTerminal(): typeof TerminalType {
  return (createRequire(import.meta.url)("@xterm/headless") as { Terminal: typeof TerminalType }).Terminal;
}
