/**
 * What a person reads of a seat's terminal output outside a terminal emulator: `teamd logs`
 * and the last lines `teamd start` and `teamd status` show. An agent's pty output is full of
 * escape sequences (colours, cursor moves, titles, the alternate screen); replayed raw they
 * would drive the owner's terminal (issue 21), escaped they are unreadable. So they are
 * dropped, whole: CSI (ESC [ … final, and 8-bit CSI), OSC (ESC ] … BEL or ST), the string
 * commands DCS, SOS, PM and APC (… ST), and the two-byte escapes. A carriage return keeps what
 * was written after it (a progress line ends as its last state), a backspace takes back one
 * character, tabs stay, and every other control is dropped. The result is plain text; the
 * printer still passes each line through terminalText (bidirectional and invisible marks).
 */

// One alternation, longest forms first. Unterminated sequences at the end are dropped too.
const SEQUENCES = new RegExp(
  [
    "\\u001b\\[[\\u0030-\\u003f]*[\\u0020-\\u002f]*[\\u0040-\\u007e]?", // CSI
    "\\u009b[\\u0030-\\u003f]*[\\u0020-\\u002f]*[\\u0040-\\u007e]?", // 8-bit CSI
    "(?:\\u001b\\]|\\u009d)[^\\u0007\\u001b\\u009c]*(?:\\u0007|\\u001b\\\\|\\u009c)?", // OSC
    "(?:\\u001b[PX^_]|[\\u0090\\u0098\\u009e\\u009f])[^\\u001b\\u009c]*(?:\\u001b\\\\|\\u009c)?", // DCS, SOS, PM, APC
    "\\u001b[\\u0020-\\u002f]*[\\u0030-\\u007e]?", // two-byte escapes (ESC 7, ESC ( B, ...)
  ].join("|"),
  "g",
);
const OTHER_CONTROLS = /[\u0000-\u0007\u000b-\u000c\u000e-\u001f\u007f-\u009f]/g;

/** Terminal output (UTF-8, possibly cut mid-sequence at either end) as plain lines. */
export function plainLines(output: Uint8Array | string): string[] {
  const text = typeof output === "string" ? output : Buffer.from(output).toString("utf8");
  const stripped = text.replace(SEQUENCES, "").replace(/\r\n/g, "\n");
  const lines = stripped.split("\n").map(plainLine);
  if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  return lines;
}

function plainLine(line: string): string {
  // What a carriage return leaves visible: the last write over the line (not a full overprint model).
  // Trailing CRs trimmed by a loop, not /\r+$/ (which backtracks: 64 K of them took seconds).
  let end = line.length;
  while (end > 0 && line.charCodeAt(end - 1) === 0x0d) end -= 1;
  const trimmed = line.slice(0, end);
  const rest = trimmed.slice(trimmed.lastIndexOf("\r") + 1);
  // A stack of characters: a backspace pops one, so a line of N backspaces costs N, not N² (a
  // seat's 64 KiB line of them stalled the daemon for seconds: test/escape/seat-output.test.ts).
  const out: string[] = [];
  for (const ch of rest) {
    if (ch === "\b") out.pop();
    else out.push(ch);
  }
  return out.join("").replace(OTHER_CONTROLS, "");
}

/** The last `n` lines of terminal output, plain. */
export function lastPlainLines(output: Uint8Array, n: number): string[] {
  return n <= 0 ? [] : plainLines(output).slice(-n);
}
