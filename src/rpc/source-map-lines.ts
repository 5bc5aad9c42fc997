/**
 * A source map's lookups (what Node's `SourceMap#findEntry` answers) without holding the map
 * decoded. Node's SourceMap decodes every mapping into objects when it is made: for the daemon's
 * bundle (a 1.6 MB map) that was ~54 MB the daemon kept from its first formatted stack on — and
 * Node forks the whole daemon for every process it starts (src/rpc/bundle-loader.ts). Here one
 * pass over the mappings keeps, per generated line, where its segments start and the running
 * state there (four numbers a line, in typed arrays); a lookup decodes its one line.
 */
export interface SourceMapEntry {
  readonly originalSource?: string;
  /** 0-based, as Node's findEntry. */
  readonly originalLine?: number;
  readonly originalColumn?: number;
  readonly name?: string;
}

export interface SourceMapPayload {
  readonly sources: readonly string[];
  readonly names?: readonly string[];
  readonly mappings: string;
}

export interface LineSourceMap {
  /** The mapping at or before (line, column), both 0-based, as Node's SourceMap#findEntry; {} where there is none. */
  findEntry(line: number, column: number): SourceMapEntry;
}

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const DIGIT = new Int8Array(128).fill(-1);
for (let i = 0; i < BASE64.length; i++) DIGIT[BASE64.charCodeAt(i)] = i;
const COMMA = 44;
const SEMICOLON = 59;

/** Reads base64 VLQ numbers from `text` at `at`, one call per number. */
class VlqReader {
  at = 0;
  constructor(private readonly text: string) {}

  /** Whether a segment's next field follows (not the end of the segment, line or text). */
  more(): boolean {
    if (this.at >= this.text.length) return false;
    const code = this.text.charCodeAt(this.at);
    return code !== COMMA && code !== SEMICOLON;
  }

  next(): number {
    let value = 0;
    let shift = 0;
    for (;;) {
      const code = this.text.charCodeAt(this.at++);
      const digit = code < 128 ? (DIGIT[code] as number) : -1;
      if (digit < 0) throw new Error(`a source map's mappings hold ${JSON.stringify(this.text[this.at - 1] ?? "the end")} inside a number`);
      value += (digit & 31) * 2 ** shift;
      shift += 5;
      if ((digit & 32) === 0) break;
      if (shift > 30) throw new Error("a source map's mappings hold a number past 32 bits");
    }
    const magnitude = Math.floor(value / 2);
    return value % 2 === 1 ? -magnitude : magnitude;
  }
}

interface Segment {
  column: number;
  fields: number;
  source: number;
  line: number;
  originalColumn: number;
  name: number;
}

export function lineSourceMap(payload: SourceMapPayload): LineSourceMap {
  const { mappings } = payload;
  // As Node's: the sources as named (bundle-loader.ts resolves them against the map's folder).
  const sources = payload.sources;
  const names = payload.names ?? [];
  // Per generated line: where its segments start, and the running state before them.
  const lineCount = countLines(mappings);
  const starts = new Int32Array(lineCount);
  const state = new Int32Array(lineCount * 4);
  const reader = new VlqReader(mappings);
  const running = [0, 0, 0, 0];
  for (let line = 0; line < lineCount; line++) {
    starts[line] = reader.at;
    state.set(running, line * 4);
    while (reader.at < mappings.length && mappings.charCodeAt(reader.at) !== SEMICOLON) {
      if (mappings.charCodeAt(reader.at) === COMMA) {
        reader.at++;
        continue;
      }
      reader.next(); // the generated column: each line's starts at 0
      for (let field = 0; field < 4 && reader.more(); field++) running[field] = (running[field] as number) + reader.next();
    }
    reader.at++;
  }

  /** The segments of one line, in order, each with the running state after it. */
  const segmentsOf = (line: number): Segment[] => {
    const at = new VlqReader(mappings);
    at.at = starts[line] as number;
    const run = Array.from(state.subarray(line * 4, line * 4 + 4));
    const found: Segment[] = [];
    let column = 0;
    while (at.at < mappings.length && mappings.charCodeAt(at.at) !== SEMICOLON) {
      if (mappings.charCodeAt(at.at) === COMMA) {
        at.at++;
        continue;
      }
      column += at.next();
      let fields = 1;
      for (let field = 0; field < 4 && at.more(); field++, fields++) run[field] = (run[field] as number) + at.next();
      found.push({ column, fields, source: run[0] as number, line: run[1] as number, originalColumn: run[2] as number, name: run[3] as number });
    }
    return found;
  };

  const entry = (segment: Segment): SourceMapEntry => {
    if (segment.fields < 4) return {};
    const name = segment.fields >= 5 ? names[segment.name] : undefined;
    return {
      ...(sources[segment.source] !== undefined ? { originalSource: sources[segment.source] } : {}),
      originalLine: segment.line,
      originalColumn: segment.originalColumn,
      ...(name !== undefined ? { name } : {}),
    };
  };

  return {
    findEntry(line, column) {
      if (!Number.isInteger(line) || line < 0) return {};
      // The last segment at or before the column on this line; else the last of an earlier line.
      for (let at = Math.min(line, lineCount - 1), first = true; at >= 0; at--, first = false) {
        const segments = segmentsOf(at);
        const before = first && at === line ? segments.filter((s) => s.column <= column) : segments;
        const last = before.at(-1);
        if (last !== undefined) return entry(last);
      }
      return {};
    },
  };
}

function countLines(mappings: string): number {
  let lines = 1;
  for (let i = 0; i < mappings.length; i++) if (mappings.charCodeAt(i) === SEMICOLON) lines++;
  return lines;
}
