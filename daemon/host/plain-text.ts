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
  const cr = line.replace(/\r+$/, "").lastIndexOf("\r");
  let rest = cr >= 0 ? line.slice(cr + 1) : line;
  rest = rest.replace(/\r/g, "");
  let out = "";
  for (const ch of rest) {
    if (ch === "\b") out = [...out].slice(0, -1).join("");
    else out += ch;
  }
  return out.replace(OTHER_CONTROLS, "");
}

/** The last `n` lines of terminal output, plain. */
export function lastPlainLines(output: Uint8Array, n: number): string[] {
  return n <= 0 ? [] : plainLines(output).slice(-n);
}
