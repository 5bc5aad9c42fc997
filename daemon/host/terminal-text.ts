import { StringDecoder } from "node:string_decoder";

/**
 * Text a person reads in a terminal, when some of it came from a seat (a refused ref name in a
 * record's target, a notice's subject): a seat can put escape sequences there — OSC 52 writes
 * the owner's clipboard, others set the title, erase lines, move the cursor, reorder a line
 * (bidirectional overrides) — so every view that prints it makes each such character visible
 * instead (issue 21, terminal injection; found by an outside attack through `teamd log`).
 *
 * Escaped: every C0 control (newline and tab too: a field is one line), DEL, every C1 control
 * (U+0080–U+009F: 8-bit CSI and OSC), the bidirectional marks, embeddings, overrides and
 * isolates, the line and paragraph separators, the invisible characters that make two names
 * look alike (soft hyphen, zero-width space, word joiner, byte-order mark), and the backslash
 * itself, so an escape cannot be forged. Everything else passes as it is, other scripts included.
 */

// The invisible ones (one list for every view): soft hyphen, the Arabic letter mark, the Hangul
// and Mongolian fillers, zero-width space, the direction marks, line and paragraph separators,
// embeddings and overrides, the word joiner and the invisible math operators, the isolates, the
// byte-order mark, the tag block U+E0000-E007F ("ASCII smuggling": text a person cannot see
// but a model reading the same bytes does; found by an attack through teamd logs), and the
// variation selectors but U+FE0F (U+FE00-FE0E, U+E0100-E01EF: 256 values, a byte each, hidden
// after any character), the combining grapheme joiner, the Khmer invisible vowels, the
// interlinear annotation marks and the invisible musical formatting marks (found by the next
// attack). Kept: U+FE0F, the zero-width joiner and non-joiner (emoji and scripts need them).
const INVISIBLE =
  "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\u3164\ufe00-\ufe0e\ufeff\uffa0\ufff9-\ufffb\u{1d173}-\u{1d17a}\u{e0000}-\u{e007f}\u{e0100}-\u{e01ef}";
const UNSAFE = new RegExp(`[\\u0000-\\u001f\\u007f-\\u009f${INVISIBLE}\\\\]`, "gu");

const NAMED: Readonly<Record<string, string>> = { "\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\" };

function escaped(ch: string): string {
  const named = NAMED[ch];
  if (named !== undefined) return named;
  const code = ch.codePointAt(0) ?? 0;
  if (code < 0x100) return `\\x${code.toString(16).padStart(2, "0")}`;
  return code > 0xffff ? `\\u{${code.toString(16)}}` : `\\u${code.toString(16).padStart(4, "0")}`;
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
const JSON_UNSAFE = new RegExp(`[\\u007f-\\u009f${INVISIBLE}]`, "gu");

export function terminalJson(json: string): string {
  // Each UTF-16 unit as \uXXXX (an astral tag character becomes its surrogate pair): the same JSON.
  return json.replace(JSON_UNSAFE, (ch) => Array.from({ length: ch.length }, (_, i) => `\\u${ch.charCodeAt(i).toString(16).padStart(4, "0")}`).join(""));
}

/**
 * A command's output for a terminal, streamed (`teamd exec` when its stdout or stderr is a
 * terminal): what terminalText escapes, but lines and tabs kept, CR kept before LF (a lone
 * CR, which would let a later line overwrite an earlier one, is shown), and backslashes left
 * single (this is a program's output, not a field to read back). UTF-8 split
 * across chunks is joined before it is judged; bytes that are not UTF-8 show as U+FFFD.
 */
const STREAM_UNSAFE = new RegExp(`[\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f${INVISIBLE}]`, "gu");

export function terminalStream(): { write(chunk: Uint8Array): string; end(): string } {
  const decoder = new StringDecoder("utf8");
  let heldCr = false;
  const render = (text: string, final: boolean): string => {
    let input = heldCr ? `\r${text}` : text;
    heldCr = !final && input.endsWith("\r");
    if (heldCr) input = input.slice(0, -1);
    return input
      .split("\n")
      .map((line, i, lines) => {
        const crlf = i < lines.length - 1 && line.endsWith("\r");
        return (crlf ? line.slice(0, -1) : line).replace(STREAM_UNSAFE, escaped) + (crlf ? "\r" : "");
      })
      .join("\n");
  };
  return {
    write: (chunk) => render(decoder.write(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)), false),
    end: () => render(decoder.end(), true),
  };
}

/**
 * A table row for a terminal `columns` wide: cut to one visual row (ending in "…"), so text a
 * seat put in a field — spaces to pad, then what looks like another record — never wraps onto
 * a row of its own (found by an attack through `teamd log`'s detail column). `columns`
 * undefined (a pipe, a file) keeps the row whole. Wide characters (CJK, emoji) count two.
 * Apply after terminalText: an escape's visible form is what takes the room.
 */
export function fitRow(row: string, columns: number | undefined): string {
  if (columns === undefined || columns <= 1) return row;
  let width = 0;
  let out = "";
  for (const ch of row) {
    const w = wide(ch.codePointAt(0) ?? 0) ? 2 : 1;
    if (width + w > columns - 1) return `${out}…`;
    width += w;
    out += ch;
  }
  return out;
}

/** East Asian wide and fullwidth ranges, and the emoji planes: two columns in a terminal. */
function wide(code: number): boolean {
  return (
    (code >= 0x1100 && code <= 0x115f) ||
    (code >= 0x2e80 && code <= 0xa4cf) ||
    (code >= 0xac00 && code <= 0xd7a3) ||
    (code >= 0xf900 && code <= 0xfaff) ||
    (code >= 0xfe30 && code <= 0xfe4f) ||
    (code >= 0xff00 && code <= 0xff60) ||
    (code >= 0xffe0 && code <= 0xffe6) ||
    (code >= 0x1f300 && code <= 0x1faff) ||
    (code >= 0x20000 && code <= 0x3fffd)
  );
}
