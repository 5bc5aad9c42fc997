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

const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u200b\u200e\u200f\u2028-\u202e\u2060\u2066-\u2069\ufeff\\]/g;

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
  return json.replace(
    /[\u007f-\u009f\u00ad\u061c\u200b\u200e\u200f\u2028-\u202e\u2060\u2066-\u2069\ufeff]/g,
    (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/**
 * A command's output for a terminal, streamed (`teamd exec` when its stdout or stderr is a
 * terminal): what terminalText escapes, but lines and tabs kept, CR kept before LF (a lone
 * CR, which would let a later line overwrite an earlier one, is shown), and backslashes left
 * single (this is a program's output, not a field to read back). UTF-8 split
 * across chunks is joined before it is judged; bytes that are not UTF-8 show as U+FFFD.
 */
const STREAM_UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u200b\u200e\u200f\u2028-\u202e\u2060\u2066-\u2069\ufeff]/g;

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
