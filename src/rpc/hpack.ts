/**
 * HPACK (RFC 7541), the header compression of HTTP/2, as the client of teamd's gRPC needs it
 * (src/rpc/h2-client.ts, issue 26): a decoder for what the daemon's server (grpc-js over
 * nghttp2) sends — indexed fields, literals with and without indexing, the dynamic table and
 * its size updates, Huffman-coded strings — and an encoder for a request's few headers
 * (literals, never indexed, never Huffman-coded: nothing to gain on a unix socket).
 *
 * Everything here is bounded: a header block, a string, an integer and the dynamic table
 * (at most the size this side announced), and any malformed input throws HpackError, which
 * the connection turns into a COMPRESSION_ERROR (RFC 7540 §4.3).
 */

export class HpackError extends Error {
  override readonly name = "HpackError";
}

/** The static table (RFC 7541 Appendix A), index 1 first. */
const STATIC_TABLE: readonly (readonly [string, string])[] = [
  [":authority", ""],
  [":method", "GET"],
  [":method", "POST"],
  [":path", "/"],
  [":path", "/index.html"],
  [":scheme", "http"],
  [":scheme", "https"],
  [":status", "200"],
  [":status", "204"],
  [":status", "206"],
  [":status", "304"],
  [":status", "400"],
  [":status", "404"],
  [":status", "500"],
  ["accept-charset", ""],
  ["accept-encoding", "gzip, deflate"],
  ["accept-language", ""],
  ["accept-ranges", ""],
  ["accept", ""],
  ["access-control-allow-origin", ""],
  ["age", ""],
  ["allow", ""],
  ["authorization", ""],
  ["cache-control", ""],
  ["content-disposition", ""],
  ["content-encoding", ""],
  ["content-language", ""],
  ["content-length", ""],
  ["content-location", ""],
  ["content-range", ""],
  ["content-type", ""],
  ["cookie", ""],
  ["date", ""],
  ["etag", ""],
  ["expect", ""],
  ["expires", ""],
  ["from", ""],
  ["host", ""],
  ["if-match", ""],
  ["if-modified-since", ""],
  ["if-none-match", ""],
  ["if-range", ""],
  ["if-unmodified-since", ""],
  ["last-modified", ""],
  ["link", ""],
  ["location", ""],
  ["max-forwards", ""],
  ["proxy-authenticate", ""],
  ["proxy-authorization", ""],
  ["range", ""],
  ["referer", ""],
  ["refresh", ""],
  ["retry-after", ""],
  ["server", ""],
  ["set-cookie", ""],
  ["strict-transport-security", ""],
  ["transfer-encoding", ""],
  ["user-agent", ""],
  ["vary", ""],
  ["via", ""],
  ["www-authenticate", ""],
];

/**
 * The Huffman code (RFC 7541 Appendix B) as the length in bits of each symbol's code, symbols
 * 0-255 and EOS (256). The code is canonical — codes of one length are consecutive, in symbol
 * order, after the shorter ones — so the lengths alone define it (test/rpc/hpack.test.ts checks
 * the code is complete, EOS is thirty 1 bits, and the RFC's examples decode).
 */
export const HUFFMAN_LENGTHS: readonly number[] = [
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11,
  10, 10, 8, 11, 8, 6, 6, 6, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7,
  8, 13, 19, 13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23,
  22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23,
  23, 21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26,
  27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27,
  27, 27, 26, 30,
];

const EOS = 256;
const MAX_CODE_BITS = 30;

/** For canonical decoding: per length, the first code of that length, how many there are, and where their symbols start in SYMBOLS. */
interface Canonical {
  readonly first: readonly number[];
  readonly count: readonly number[];
  readonly offset: readonly number[];
  readonly symbols: readonly number[];
}

function canonical(lengths: readonly number[]): Canonical {
  // One counting pass, then the symbols placed by (length, symbol) — every command that talks to
  // the daemon builds this at its start, and a sort with a comparator and a filter per length cost
  // ~0.4 ms of it, cold.
  const count: number[] = new Array<number>(MAX_CODE_BITS + 1).fill(0);
  for (const length of lengths) count[length] = (count[length] as number) + 1;
  const first: number[] = [];
  const offset: number[] = [];
  let code = 0;
  let at = 0;
  for (let bits = 1; bits <= MAX_CODE_BITS; bits++) {
    code <<= 1;
    first[bits] = code;
    offset[bits] = at;
    code += count[bits] as number;
    at += count[bits] as number;
  }
  const next = offset.slice();
  const symbols: number[] = new Array<number>(lengths.length);
  for (let symbol = 0; symbol < lengths.length; symbol++) {
    const bits = lengths[symbol] as number;
    symbols[next[bits] as number] = symbol;
    next[bits] = (next[bits] as number) + 1;
  }
  return { first, count, offset, symbols };
}

/** Made once per process when the module loads (a few microseconds). */
const HUFFMAN = canonical(HUFFMAN_LENGTHS);

/** A Huffman-coded string (RFC 7541 §5.2): every symbol decoded, the padding (at most 7 bits, all 1s: the EOS code's start) checked, EOS refused. */
export function huffmanDecode(bytes: Uint8Array): string {
  const table = HUFFMAN;
  let out = "";
  let code = 0;
  let bits = 0;
  for (const byte of bytes) {
    for (let bit = 7; bit >= 0; bit--) {
      code = (code << 1) | ((byte >> bit) & 1);
      bits++;
      if (bits > MAX_CODE_BITS) throw new HpackError("a Huffman code longer than any symbol's");
      const index = code - (table.first[bits] as number);
      if (index >= 0 && index < (table.count[bits] as number)) {
        const symbol = table.symbols[(table.offset[bits] as number) + index] as number;
        if (symbol === EOS) throw new HpackError("EOS inside a Huffman-coded string");
        out += String.fromCharCode(symbol);
        code = 0;
        bits = 0;
      }
    }
  }
  if (bits > 7) throw new HpackError("Huffman padding longer than 7 bits");
  if (code !== (1 << bits) - 1) throw new HpackError("Huffman padding that is not the EOS code's start");
  return out;
}

/** One header field, its name and value as bytes read one to a character (latin1): no byte is lost or merged. */
export type HeaderField = readonly [string, string];

export interface HpackBounds {
  /** The dynamic table's size as this side announced it (SETTINGS_HEADER_TABLE_SIZE); a size update above it is an error. */
  readonly maxTableSize: number;
  /** The most a decoded header list may hold (names, values and 32 octets each, as RFC 7540 §6.5.2 counts it). */
  readonly maxListSize: number;
}

/** A decoder's state across a connection's header blocks: the dynamic table. */
export class HpackDecoder {
  private readonly table: HeaderField[] = [];
  private size = 0;
  private capacity: number;

  constructor(private readonly bounds: HpackBounds) {
    this.capacity = bounds.maxTableSize;
  }

  /** One complete header block (HEADERS and its CONTINUATIONs, joined) into its fields, in order. */
  decode(block: Uint8Array): HeaderField[] {
    const fields: HeaderField[] = [];
    let listSize = 0;
    let at = 0;
    let fieldSeen = false;
    const integer = (prefixBits: number): number => {
      const mask = (1 << prefixBits) - 1;
      if (at >= block.length) throw new HpackError("a header block ends inside an integer");
      let value = (block[at++] as number) & mask;
      if (value < mask) return value;
      let shift = 0;
      for (;;) {
        if (at >= block.length) throw new HpackError("a header block ends inside an integer");
        // Past five continuation bytes no value fits in 31 bits (and 2^shift would reach Infinity, then NaN).
        if (shift > 28) throw new HpackError("an integer past 2^31");
        const byte = block[at++] as number;
        value += (byte & 0x7f) * 2 ** shift;
        shift += 7;
        if (value > 0x7fffffff) throw new HpackError("an integer past 2^31");
        if ((byte & 0x80) === 0) return value;
      }
    };
    const string = (): string => {
      if (at >= block.length) throw new HpackError("a header block ends before a string");
      const coded = ((block[at] as number) & 0x80) !== 0;
      const length = integer(7);
      if (length > block.length - at) throw new HpackError("a string longer than its header block");
      const bytes = block.subarray(at, at + length);
      at += length;
      return coded ? huffmanDecode(bytes) : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1");
    };
    const entry = (index: number): HeaderField => {
      if (index === 0) throw new HpackError("index 0");
      if (index <= STATIC_TABLE.length) return STATIC_TABLE[index - 1] as HeaderField;
      const field = this.table[index - STATIC_TABLE.length - 1];
      if (field === undefined) throw new HpackError(`index ${index} is past the dynamic table`);
      return field;
    };
    const emit = (field: HeaderField) => {
      fieldSeen = true;
      listSize += field[0].length + field[1].length + 32;
      if (listSize > this.bounds.maxListSize) throw new HpackError(`a header list past ${this.bounds.maxListSize} octets`);
      fields.push(field);
    };
    while (at < block.length) {
      const byte = block[at] as number;
      if (byte & 0x80) {
        emit(entry(integer(7)));
      } else if (byte & 0x40) {
        const index = integer(6);
        const name = index === 0 ? string() : entry(index)[0];
        const field: HeaderField = [name, string()];
        this.add(field);
        emit(field);
      } else if (byte & 0x20) {
        // A size update comes first in a block (RFC 7541 §4.2), and never above what this side announced.
        if (fieldSeen) throw new HpackError("a dynamic table size update after a header field");
        const size = integer(5);
        if (size > this.bounds.maxTableSize) throw new HpackError(`a dynamic table of ${size} octets, past the ${this.bounds.maxTableSize} announced`);
        this.capacity = size;
        this.evict(0);
      } else {
        // Without indexing (0000) or never indexed (0001): the same to a decoder.
        const index = integer(4);
        const name = index === 0 ? string() : entry(index)[0];
        emit([name, string()]);
      }
    }
    return fields;
  }

  private add(field: HeaderField): void {
    const size = field[0].length + field[1].length + 32;
    this.evict(size);
    // An entry larger than the table empties it and is not added (RFC 7541 §4.4).
    if (size > this.capacity) return;
    this.table.unshift(field);
    this.size += size;
  }

  private evict(room: number): void {
    while (this.size + room > this.capacity && this.table.length > 0) {
      const last = this.table.pop() as HeaderField;
      this.size -= last[0].length + last[1].length + 32;
    }
  }
}

/** A request's header block: each field a literal never indexed (RFC 7541 §6.2.3), its name and value as they are (ASCII). */
export function encodeHeaders(fields: readonly HeaderField[]): Buffer {
  const parts: number[] = [];
  const integer = (value: number, prefixBits: number, flags: number) => {
    const mask = (1 << prefixBits) - 1;
    if (value < mask) {
      parts.push(flags | value);
      return;
    }
    parts.push(flags | mask);
    let rest = value - mask;
    while (rest >= 0x80) {
      parts.push((rest & 0x7f) | 0x80);
      rest = Math.floor(rest / 0x80);
    }
    parts.push(rest);
  };
  const string = (text: string) => {
    if (!/^[\x20-\x7e]*$/.test(text)) throw new HpackError(`a header the client sends must be printable ASCII: ${JSON.stringify(text.slice(0, 40))}`);
    integer(text.length, 7, 0);
    for (let i = 0; i < text.length; i++) parts.push(text.charCodeAt(i));
  };
  for (const [name, value] of fields) {
    parts.push(0x10);
    string(name);
    string(value);
  }
  return Buffer.from(parts);
}
