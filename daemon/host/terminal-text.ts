/**
 * Text a person reads in a terminal, when some of it came from a seat (a refused ref name in a
 * record's target, a notice's subject): a seat can put escape sequences there — OSC 52 writes
 * the owner's clipboard, others set the title, erase lines, move the cursor, reorder a line
 * (bidirectional overrides) — so every view that prints it makes each such character visible
 * instead (issue 21, terminal injection; found by an outside attack through `teamd log`).
 *
 * Escaped: every C0 control (newline and tab too: a field is one line), DEL, every C1 control
 * (U+0080–U+009F: 8-bit CSI and OSC), the bidirectional marks, embeddings, overrides and
 * isolates, the line and paragraph separators, and the backslash itself, so an escape cannot
 * be forged. Everything else passes as it is, other scripts included.
 */

const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\\]/g;

const NAMED: Readonly<Record<string, string>> = { "\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\" };

function escaped(ch: string): string {
  const named = NAMED[ch];
  if (named !== undefined) return named;
  const code = ch.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
}

/** One field of a human-readable view, safe to print: see above. */
export function terminalText(text: string): string {
  return text.replace(UNSAFE, escaped);
}

/** A multi-line view: each line through terminalText, its newlines kept. */
export function terminalLines(text: string): string {
  return text.split("\n").map(terminalText).join("\n");
}

/** JSON for a terminal or a pipe: JSON.stringify escapes C0 but leaves C1 controls and bidirectional controls raw; these become \uXXXX, still the same JSON. */
export function terminalJson(json: string): string {
  return json.replace(/[\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
