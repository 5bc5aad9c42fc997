/**
 * What a seat's pty may do to the owner's terminal through `teamd attach` (issue 21, terminal
 * injection). A pty is a terminal by design — an agent's UI draws with cursor moves, colours,
 * erases, the alternate screen — so screen control passes. What reaches beyond the screen is
 * dropped, whole, as a terminal's own parser would see it (ECMA-48 and DEC's state machine,
 * streamed: a sequence split across chunks is judged whole):
 *
 *   - every OSC but the window title (0, 1, 2): OSC 52 writes the clipboard, OSC 8 makes
 *     hyperlinks whose text lies about their target, OSC 7, 9, 777 and 1337 set paths, raise
 *     notifications or (iTerm2) write files, OSC 4/10/11/12 query colours;
 *   - DCS, APC, PM and SOS whole: passthrough to an outer terminal (tmux, screen), status
 *     requests (DECRQSS), graphics protocols, and what terminals do with the rest;
 *   - every query and report: device attributes (CSI c), status and cursor reports (CSI n),
 *     mode reports (DECRQM), window operations and their reports (CSI t, including the title
 *     report that types the title back), XTVERSION, XTQMODKEYS and kitty's keyboard query,
 *     DECREQTPARM, checksum and presentation reports, DECID (ESC Z), ENQ — the answers would
 *     be typed into the seat, telling it about the owner's terminal; when nobody is attached
 *     nobody answers either, so a program must already cope without them;
 *   - media copy (CSI i): the printer;
 *   - C1 controls, as 8-bit bytes or as UTF-8 code points U+0080–U+009F: a terminal may read
 *     them as CSI, OSC, DCS — the 7-bit forms above are judged, these are dropped.
 *
 * The title passes only as printable text of at most TITLE_MAX bytes. A sequence longer than
 * the terminal-sized bound (CSI_MAX) is dropped, never held: the filter holds at most one
 * bounded sequence in memory, whatever the seat sends.
 *
 * `restore()` is what leaves the terminal as it was at detach: for each mode the seat changed
 * during the session (alternate screen, mouse reporting, focus events, bracketed paste,
 * application keys and keypad, a hidden cursor, scroll margins, kitty keyboard flags,
 * modifyOtherKeys, the character set), the sequence that puts it back; then plain attributes.
 */

const ESC = 0x1b;
const BEL = 0x07;
const CAN = 0x18;
const SUB = 0x1a;
const ENQ = 0x05;
export const CSI_MAX = 256;
export const TITLE_MAX = 512;

type State =
  | { kind: "ground" }
  | { kind: "escape"; bytes: number[] }
  | { kind: "csi"; bytes: number[] }
  /** An OSC, DCS, SOS, PM or APC: kept (title) or dropped until its terminator; `esc` after an ESC that may begin ST. */
  | { kind: "string"; introducer: number; keep: boolean; bytes: number[]; esc: boolean };

export interface FilterCounts {
  /** Sequences dropped, by kind ("osc 52", "dcs", "csi c", ...). */
  readonly dropped: ReadonlyMap<string, number>;
}

/**
 * DEC private modes the seat may set, and what turns each back off (or on) at detach. Any other
 * private mode is dropped: DECANM (?2, VT52 mode) leaves the terminal speaking another
 * protocol, and modes no agent UI needs are not worth what a terminal may do with them.
 */
const RESTORED_MODES: ReadonlyMap<number, "l" | "h"> = new Map([
  [1, "l"], // application cursor keys
  [5, "l"], // reverse video
  [6, "l"], // origin mode
  [8, "h"], // key autorepeat
  [12, "l"], // blinking cursor
  [1007, "l"], // alternate scroll
  [2026, "l"], // synchronized output
  [25, "h"], // cursor shown
  [47, "l"],
  [1047, "l"],
  [1049, "l"], // the alternate screen
  [9, "l"],
  [1000, "l"],
  [1001, "l"],
  [1002, "l"],
  [1003, "l"],
  [1005, "l"],
  [1006, "l"],
  [1015, "l"],
  [1016, "l"], // mouse reporting
  [1004, "l"], // focus events
  [2004, "l"], // bracketed paste
  [7, "h"], // autowrap
]);
/** Private modes that pass without a restore (saving the cursor changes no mode). */
const PASSED_MODES: ReadonlySet<number> = new Set([1048]);
/**
 * ANSI modes (CSI n h/l) the seat may set, with their restore: insert (IRM) and new-line (LNM).
 * KAM (2) locks the owner's keyboard — Ctrl-] could not be typed to detach — and SRM (12)
 * turns on the terminal's local echo, which would outlive the session and show what the owner
 * types at a password prompt: both, and every other ANSI mode, are dropped.
 */
const ANSI_MODES: ReadonlyMap<number, "l" | "h"> = new Map([
  [4, "l"],
  [20, "l"],
]);

/**
 * A title's bytes are well-formed UTF-8 with no C1 or bidirectional control: a raw 0x9B or 0x9D
 * inside a title is CSI or OSC to a terminal that does not decode UTF-8.
 */
function cleanUtf8(bytes: readonly number[]): boolean {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(bytes));
  } catch {
    return false;
  }
  return !/[\u0080-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/.test(text);
}

/** The few sequences with intermediates that only draw: cursor style, soft reset, character protection, conformance level. */
const WITH_INTERMEDIATES: ReadonlySet<string> = new Set([" q", "!p", '"q', '"p']);

interface Utf8 {
  readonly left: number;
  readonly lead: number;
  readonly first: boolean;
}
const NO_UTF8: Utf8 = Object.freeze({ left: 0, lead: 0, first: false });

export class ScreenFilter {
  private state: State = { kind: "ground" };
  /** A 0xC2 not yet passed on: the next byte says whether it begins a C1 code point. */
  private heldC2 = false;
  /** The UTF-8 sequence under way in ground: continuation bytes left, its lead, whether the next is its second byte. */
  private utf8: Utf8 = NO_UTF8;
  private readonly touched = new Set<number>();
  private readonly touchedAnsi = new Set<number>();
  private cursorStyle = false;
  private keypad = false;
  private margins = false;
  private kittyPushes = 0;
  private modifyOtherKeys = false;
  private shifted = false;
  private readonly droppedCounts = new Map<string, number>();

  get counts(): FilterCounts {
    return { dropped: this.droppedCounts };
  }

  /** Filter one chunk of the seat's output; what may reach the terminal, in order. */
  write(chunk: Uint8Array): Buffer {
    const out: number[] = [];
    for (const byte of chunk) this.step(byte, out);
    return Buffer.from(out);
  }

  /** The end of the stream: a 0xC2 still held (harmless alone: a terminal shows it as a replacement character). */
  end(): Buffer {
    const held = this.heldC2 ? Buffer.from([0xc2]) : Buffer.alloc(0);
    this.heldC2 = false;
    return held;
  }

  /** The bytes that undo what the seat changed in the terminal's modes during the session. */
  restore(): Buffer {
    const parts: string[] = [];
    // The alternate screen first: leaving it restores the main screen's content.
    for (const mode of [1049, 1047, 47]) if (this.touched.has(mode)) parts.push(`\x1b[?${mode}l`);
    for (const [mode, to] of RESTORED_MODES) if (this.touched.has(mode) && ![1049, 1047, 47].includes(mode)) parts.push(`\x1b[?${mode}${to}`);
    for (const [mode, to] of ANSI_MODES) if (this.touchedAnsi.has(mode)) parts.push(`\x1b[${mode}${to}`);
    if (this.cursorStyle) parts.push("\x1b[0 q");
    if (this.margins) parts.push("\x1b[r");
    if (this.keypad) parts.push("\x1b>");
    if (this.kittyPushes > 0) parts.push(`\x1b[<${this.kittyPushes}u`);
    if (this.modifyOtherKeys) parts.push("\x1b[>4m");
    if (this.shifted) parts.push("\x0f\x1b(B\x1b)B\x1b*B\x1b+B");
    parts.push("\x1b[0m");
    return Buffer.from(parts.join(""), "latin1");
  }

  private drop(kind: string): void {
    this.droppedCounts.set(kind, (this.droppedCounts.get(kind) ?? 0) + 1);
  }

  private step(byte: number, out: number[]): void {
    const state = this.state;
    switch (state.kind) {
      case "ground":
        return this.ground(byte, out);
      case "escape":
        return this.escape(state, byte, out);
      case "csi":
        return this.csi(state, byte, out);
      case "string":
        return this.string(state, byte, out);
    }
  }

  private ground(byte: number, out: number[]): void {
    if (this.heldC2) {
      this.heldC2 = false;
      // A C1 code point (U+0080–U+009F) is 0xC2 then 0x80–0x9F: both bytes dropped.
      if (byte >= 0x80 && byte <= 0x9f) return this.drop("c1");
      out.push(0xc2);
      if (byte >= 0xa0 && byte <= 0xbf) {
        out.push(byte);
        return;
      }
    }
    if (byte >= 0x80 && byte <= 0xbf) {
      const pending = this.utf8;
      // An overlong form (E0 80–9F …, F0 80–8F …) could decode to a C1 code point in a lenient terminal.
      const overlong = pending.first && ((pending.lead === 0xe0 && byte < 0xa0) || (pending.lead === 0xf0 && byte < 0x90));
      if (pending.left > 0 && !overlong) {
        this.utf8 = { left: pending.left - 1, lead: pending.lead, first: false };
        out.push(byte);
        return;
      }
      this.utf8 = NO_UTF8;
      // 8-bit C1 where no UTF-8 sequence continues: a terminal in an 8-bit mode reads it as a control.
      if (byte <= 0x9f || overlong) return this.drop("c1");
      out.push(byte);
      return;
    }
    // Anything but a continuation byte ends a UTF-8 sequence.
    this.utf8 = NO_UTF8;
    if (byte === ESC) {
      this.state = { kind: "escape", bytes: [] };
      return;
    }
    if (byte === ENQ) return this.drop("enq");
    if (byte === 0x0e) this.shifted = true;
    if (byte === 0xc2) {
      this.heldC2 = true;
      return;
    }
    // C0 and C1 are never UTF-8 leads (only overlong forms begin with them), nor F5–FF.
    if (byte === 0xc0 || byte === 0xc1 || byte >= 0xf5) return this.drop("utf-8");
    if (byte >= 0xc3) this.utf8 = { left: byte < 0xe0 ? 1 : byte < 0xf0 ? 2 : 3, lead: byte, first: true };
    out.push(byte);
  }

  private escape(state: Extract<State, { kind: "escape" }>, byte: number, out: number[]): void {
    if (byte === CAN || byte === SUB) {
      this.state = { kind: "ground" };
      return;
    }
    if (byte === ESC) {
      state.bytes = [];
      return;
    }
    if (byte < 0x20) {
      // C0 inside an escape is executed as it is, by the terminal as by this filter.
      this.ground(byte, out);
      return;
    }
    if (byte === 0x7f) return;
    if (byte >= 0x80) {
      this.drop("esc cut");
      this.state = { kind: "ground" };
      this.ground(byte, out);
      return;
    }
    if (byte >= 0x20 && byte <= 0x2f) {
      if (state.bytes.length >= 4) {
        this.drop("esc");
        this.state = { kind: "ground" };
        return;
      }
      state.bytes.push(byte);
      return;
    }
    this.state = { kind: "ground" };
    if (state.bytes.length === 0) {
      switch (byte) {
        case 0x5b: // [
          this.state = { kind: "csi", bytes: [] };
          return;
        case 0x5d: // ]
          this.state = { kind: "string", introducer: 0x5d, keep: true, bytes: [], esc: false };
          return;
        case 0x50: // P: DCS
        case 0x58: // X: SOS
        case 0x5e: // ^: PM
        case 0x5f: // _: APC
          this.drop(byte === 0x50 ? "dcs" : byte === 0x58 ? "sos" : byte === 0x5e ? "pm" : "apc");
          this.state = { kind: "string", introducer: byte, keep: false, bytes: [], esc: false };
          return;
        case 0x5a: // Z: DECID, a report
          return this.drop("esc Z");
        case 0x6b: // k: screen's and tmux's title string, up to ST
          this.drop("esc k");
          this.state = { kind: "string", introducer: byte, keep: false, bytes: [], esc: false };
          return;
        case 0x6e: // n, o, |, }, ~: locking shifts into G2/G3, which would outlive the session
        case 0x6f:
        case 0x7c:
        case 0x7d:
        case 0x7e:
          return this.drop("esc shift");
        case 0x5c: // \: a lone ST
          return;
        case 0x3d: // =: application keypad
          this.keypad = true;
          break;
        case 0x3e: // >: normal keypad
          this.keypad = false;
          break;
      }
    }
    // ESC % switches the terminal's decoding (ESC % @ turns UTF-8 off: then ordinary letters'
    // bytes — ě is C4 9B — read as C1 controls, CSI among them); ESC SP selects 7- or 8-bit
    // controls and conformance levels. Neither draws anything.
    if (state.bytes[0] === 0x25 || state.bytes[0] === 0x20) return this.drop(`esc ${String.fromCharCode(state.bytes[0])}`);
    if (state.bytes[0] !== undefined && state.bytes[0] >= 0x28 && state.bytes[0] <= 0x2b) this.shifted = true;
    out.push(ESC, ...state.bytes, byte);
  }

  private csi(state: Extract<State, { kind: "csi" }>, byte: number, out: number[]): void {
    if (byte === CAN || byte === SUB) {
      this.state = { kind: "ground" };
      return;
    }
    if (byte === ESC) {
      this.drop("csi cut");
      this.state = { kind: "escape", bytes: [] };
      return;
    }
    if (byte < 0x20) {
      this.ground(byte, out);
      return;
    }
    if (byte >= 0x20 && byte <= 0x3f) {
      if (state.bytes.length >= CSI_MAX) {
        // Too long for any terminal's own parameters: dropped, and what follows is read as text.
        this.drop("csi long");
        this.state = { kind: "ground" };
        return;
      }
      state.bytes.push(byte);
      return;
    }
    this.state = { kind: "ground" };
    if (byte > 0x7e) return this.drop("csi bad");
    const verdict = this.judgeCsi(state.bytes, byte);
    if (verdict !== "pass") return this.drop(verdict);
    out.push(ESC, 0x5b, ...state.bytes, byte);
  }

  /** "pass", or the name of what is dropped. */
  private judgeCsi(bytes: readonly number[], final: number): string {
    const text = String.fromCharCode(...bytes);
    // ECMA-48: an optional private marker, parameter bytes (0x30–0x3F), then intermediates (0x20–0x2F).
    const parsed = /^([<=>?]?)([0-9:;]*)([ -/]*)$/.exec(text);
    if (parsed === null) return "csi bad";
    const [, prefix = "", params = "", intermediates = ""] = parsed;
    const f = String.fromCharCode(final);
    const name = `csi ${prefix}${intermediates}${f}`;
    if (intermediates !== "") {
      if (!WITH_INTERMEDIATES.has(`${prefix}${intermediates}${f}`)) return name;
      if (intermediates === " " && f === "q") this.cursorStyle = true;
      return "pass";
    }
    // Queries and reports: device attributes, status reports, DECREQTPARM, window operations,
    // media copy; and the tab stops' clear (g), which would outlive the session.
    if ("cnxtig".includes(f)) return name;
    if (f === "h" || f === "l") {
      const modes = params.split(";").map(Number);
      const allowed =
        prefix === "?" ? (m: number) => RESTORED_MODES.has(m) || PASSED_MODES.has(m) : prefix === "" ? (m: number) => ANSI_MODES.has(m) : () => false;
      if (!modes.every(allowed)) return `${name} ${params.slice(0, 16)}`;
    }
    if (prefix === ">" && (f === "q" || f === "T")) return name; // XTVERSION, XTRMTITLE
    if (prefix === "?" && (f === "u" || f === "m" || f === "S")) return name; // kitty keyboard query, XTQMODKEYS, XTSMGRAPHICS
    this.track(prefix, params, f);
    return "pass";
  }

  /** What a passed sequence changes that restore() must undo. */
  private track(prefix: string, params: string, f: string): void {
    if (prefix === "?" && (f === "h" || f === "l")) {
      for (const part of params.split(";")) {
        const mode = Number(part);
        if (RESTORED_MODES.has(mode)) this.touched.add(mode);
      }
    } else if (prefix === "" && (f === "h" || f === "l")) {
      for (const part of params.split(";")) this.touchedAnsi.add(Number(part));
    } else if (prefix === "" && f === "r") this.margins = true;
    else if (prefix === ">" && f === "u") this.kittyPushes = Math.min(this.kittyPushes + 1, 99);
    else if (prefix === "<" && f === "u") this.kittyPushes = Math.max(0, this.kittyPushes - (Number(params) || 1));
    else if (prefix === ">" && f === "m") this.modifyOtherKeys = true;
  }

  private string(state: Extract<State, { kind: "string" }>, byte: number, out: number[]): void {
    if (state.esc) {
      state.esc = false;
      if (byte === 0x5c) return this.endString(state, [ESC, 0x5c], out);
      // An ESC that is not ST ends the string (the terminal aborts it) and begins a new escape.
      this.endString(state, undefined, out);
      this.state = { kind: "escape", bytes: [] };
      this.step(byte, out);
      return;
    }
    if (byte === ESC) {
      state.esc = true;
      return;
    }
    if (byte === CAN || byte === SUB) return this.endString(state, undefined, out);
    if (byte === BEL && state.introducer === 0x5d) return this.endString(state, [BEL], out);
    if (state.introducer !== 0x5d) return; // DCS, SOS, PM, APC: nothing of them is kept
    // The title passes as printable text within its bound; a control, a C1 code point
    // (C2 80–9F: a terminal decoding UTF-8 could end the string there) or the bound reached drops the whole OSC.
    const previous = state.bytes[state.bytes.length - 1];
    if (byte < 0x20 || byte === 0x7f || (previous === 0xc2 && byte >= 0x80 && byte <= 0x9f) || state.bytes.length >= TITLE_MAX) state.keep = false;
    if (state.bytes.length < TITLE_MAX) state.bytes.push(byte);
  }

  /** A string ended: by its terminator (given) or aborted (undefined). Only a title within bounds passes. */
  private endString(state: Extract<State, { kind: "string" }>, terminator: number[] | undefined, out: number[]): void {
    this.state = { kind: "ground" };
    if (state.introducer !== 0x5d) return;
    const text = Buffer.from(state.bytes).toString("latin1");
    const number = /^[0-9]*/.exec(text)![0];
    const title = (number === "0" || number === "1" || number === "2") && text[number.length] === ";";
    if (terminator !== undefined && title && state.keep && cleanUtf8(state.bytes)) {
      out.push(ESC, 0x5d, ...state.bytes, ...terminator);
      return;
    }
    this.drop(`osc ${number.slice(0, 8)}`);
  }
}
