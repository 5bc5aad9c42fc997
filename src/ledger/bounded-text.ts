import { sha256, toHex } from "./codec.js";

/**
 * Every seat-supplied string a record or a reason holds is bounded (issue 20, "Records are
 * bounded"): a seat may send a multi-MiB path, ref name or request id, and without a bound each
 * refusal echoing it would put all of it in the ledger — a seat filling the owner's disk.
 *
 * A string over its bound keeps its head and its tail (a reason names the fix at its end), and
 * between them says what was cut: the original's UTF-8 byte length and its sha-256, so nothing
 * is hidden — two long inputs stay told apart, and the owner can match one he holds. The cut
 * never falls inside a UTF-8 sequence. Nothing is escaped here (display escaping is the
 * printer's); the result's UTF-8 encoding is at most `maxBytes` bytes.
 */

/** A target name, request id or other single name in a refusal record: a deep repository path or a ref fits; a 1 MiB one does not. */
export const RECORD_NAME_BYTES = 512;
/** A reason or an outcome note: room for two names and the fix the rule gives. */
export const RECORD_TEXT_BYTES = 2048;
/**
 * The most a seat-supplied string may be in an intent (its target, request id, a field):
 * longer than any ref or path git stores (PATH_MAX). An intent's strings are identities a
 * retry and a reconciliation look up, so they are never cut: a longer one is refused.
 */
export const INTENT_TEXT_BYTES = 4096;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The longest prefix of `bytes` of at most `n` bytes that ends on a UTF-8 character boundary. */
function headOf(bytes: Uint8Array, n: number): Uint8Array {
  let end = Math.min(n, bytes.length);
  // A continuation byte (10xxxxxx) at `end` means the character starting before it would be cut.
  while (end > 0 && end < bytes.length && ((bytes[end] as number) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end);
}

/** The longest suffix of `bytes` of at most `n` bytes that starts on a UTF-8 character boundary. */
function tailOf(bytes: Uint8Array, n: number): Uint8Array {
  let start = Math.max(0, bytes.length - n);
  while (start < bytes.length && ((bytes[start] as number) & 0xc0) === 0x80) start++;
  return bytes.subarray(start);
}

/** The marker that stands for what was cut. */
export function cutMarker(bytes: number, digestHex: string): string {
  return ` …[cut: ${bytes} bytes, sha256 ${digestHex}]… `;
}

/**
 * `value` if its UTF-8 form is at most `maxBytes` bytes, else its head, the cut marker and its
 * tail, at most `maxBytes` bytes in all (the tail gets a third of the room the marker leaves).
 * `maxBytes` below the marker's own size yields the marker alone: the length and hash are
 * never dropped.
 */
export function boundText(value: string, maxBytes: number): string {
  const bytes = encoder.encode(value);
  if (bytes.length <= maxBytes) return value;
  const marker = cutMarker(bytes.length, toHex(sha256(bytes)));
  const room = Math.max(0, maxBytes - encoder.encode(marker).length);
  const tailRoom = Math.floor(room / 3);
  const head = headOf(bytes, room - tailRoom);
  const tail = tailOf(bytes, tailRoom);
  return `${decoder.decode(head)}${marker}${decoder.decode(tail)}`;
}

/**
 * `text` (a reason) with every occurrence of each input over `maxName` bytes replaced by its
 * own bounded form: the record then names that input's length and hash, not only the whole
 * reason's. Inputs not over the bound are left as they are; the longest are replaced first
 * (one may contain another).
 */
export function boundEchoes(text: string, inputs: readonly string[], maxName: number): string {
  const long = [...new Set(inputs.filter((i) => i.length > 0 && utf8Bytes(i) > maxName))].sort((a, b) => b.length - a.length);
  let out = text;
  for (const input of long) if (out.includes(input)) out = out.split(input).join(boundText(input, maxName));
  return out;
}

/** The UTF-8 length of a string (what a bound counts). */
export function utf8Bytes(value: string): number {
  return encoder.encode(value).length;
}
