import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CSI_MAX, ScreenFilter, TITLE_MAX } from "../../../daemon/host/screen-filter.js";

const E = "\x1b";
const filter = (input: string | Buffer, chunks?: number[]): string => {
  const f = new ScreenFilter();
  const bytes = typeof input === "string" ? Buffer.from(input, "latin1") : input;
  if (chunks === undefined) return Buffer.concat([f.write(bytes), f.end()]).toString("latin1");
  const out: Buffer[] = [];
  let at = 0;
  for (const size of chunks) {
    out.push(f.write(bytes.subarray(at, at + size)));
    at += size;
  }
  out.push(f.write(bytes.subarray(at)), f.end());
  return Buffer.concat(out).toString("latin1");
};
const utf8 = (text: string) => Buffer.from(text, "utf8");

describe("screen filter: what passes (screen control)", () => {
  const passes: Array<[string, string]> = [
    ["plain text and newlines", "hello\r\nworld\tx\x08"],
    ["colours and attributes", `${E}[1;31mred${E}[0m ${E}[38;2;10;20;30mrgb${E}[m`],
    ["cursor moves and erases", `${E}[H${E}[2J${E}[10;5H${E}[K${E}[3A${E}[2C${E}[1J`],
    ["the alternate screen, mouse, bracketed paste, cursor visibility", `${E}[?1049h${E}[?1000;1006h${E}[?2004h${E}[?25l`],
    ["scroll margins and scrolling", `${E}[5;20r${E}[3S${E}[2T`],
    ["cursor style, soft reset, save and restore", `${E}[2 q${E}[!p${E}7${E}8${E}[s${E}[u`],
    ["character sets and keypad", `${E}(0lqk${E}(B${E}=${E}>`],
    ["the window title, BEL or ST", `${E}]0;my agent\x07${E}]2;build${E}\\`],
    ["kitty keyboard push and pop, modifyOtherKeys", `${E}[>1u${E}[<u${E}[>4;1m`],
    ["insert and new-line modes, reverse video, origin, synchronized output", `${E}[4h${E}[20h${E}[?5h${E}[?6h${E}[?2026h${E}[?2026l${E}[4l`],
    ["a bell", "\x07"],
  ];
  for (const [name, input] of passes) it(name, () => expect(filter(input)).toBe(input));

  it("UTF-8 text of every length, C2 A0 (no-break space) and second bytes in 80–9F (ā, Û) included", () => {
    for (const text of ["é ā Û ✓ 漢字 🙂", "\u00a0", "ā".repeat(10)]) expect(filter(utf8(text))).toBe(utf8(text).toString("latin1"));
  });
});

describe("screen filter: what is dropped (beyond the screen)", () => {
  const dropped: Array<[string, string, string]> = [
    ["OSC 52 (clipboard) with BEL", `a${E}]52;c;ZWNobyBwd25lZA==\x07b`, "ab"],
    ["OSC 52 with ST", `a${E}]52;c;ZWNobyBwd25lZA==${E}\\b`, "ab"],
    ["OSC 8 hyperlink: the link goes, its text stays", `${E}]8;;https://evil.example/${E}\\click${E}]8;;${E}\\`, "click"],
    ["OSC 7, 9, 777, 1337", `${E}]7;file:///etc\x07${E}]9;hi\x07${E}]777;notify;a;b\x07${E}]1337;File=name=x:AAAA\x07`, ""],
    ["colour queries and sets", `${E}]11;?\x07${E}]4;1;rgb:ff/00/00\x07${E}]10;?${E}\\`, ""],
    ["DCS: DECRQSS and tmux passthrough of an OSC 52", `${E}P$qm${E}\\${E}Ptmux;${E}${E}]52;c;eA==\x07${E}\\x`, "x"],
    ["APC, PM, SOS (graphics and the rest)", `${E}_Ga=T;AAAA${E}\\${E}^pm${E}\\${E}Xsos${E}\\ok`, "ok"],
    ["device attributes", `${E}[c${E}[0c${E}[>c${E}[=c`, ""],
    ["status and cursor reports", `${E}[5n${E}[6n${E}[?6n`, ""],
    ["window operations and the title report", `${E}[21t${E}[14t${E}[8;100;100t${E}[2t`, ""],
    ["mode and other reports", `${E}[?1$p${E}[2$p${E}[1$w${E}[1;1;1;1;1;1*y${E}[x`, ""],
    ["XTVERSION, kitty keyboard query, XTQMODKEYS, XTSMGRAPHICS", `${E}[>q${E}[>0q${E}[?u${E}[?4m${E}[?1;1S`, ""],
    ["media copy (the printer)", `${E}[5i secret ${E}[4i`, " secret "],
    ["DECID and ENQ", `${E}Z\x05x`, "x"],
    ["8-bit C1 bytes (CSI, OSC)", "a\x9b6n\x9d52;c;eA==\x07b", "a6n52;c;eA==\x07b"],
    ["C1 code points in UTF-8 (U+009B, U+009D)", utf8("a\u009b6n\u009d0;t\u0007b").toString("latin1"), "a6n0;t\x07b"],
    ["a title with a control in it", `${E}]0;a\x08b\x07x`, "x"],
    ["a title with a C1 code point in it", `${E}]0;a\xc2\x9c${E}[6nb\x07x`, "b\x07x"],
    ["an aborted OSC (CAN)", `${E}]0;title\x18x`, "x"],
    // Found by an attack on this filter: each passed before.
    ["ESC % (UTF-8 decoding off: then ě's C4 9B reads as CSI) and ESC SP (8-bit controls)", `${E}%@${E}%G${E} G${E} Fx`, "x"],
    ["a title holding raw C1 bytes or bytes that are not UTF-8", `${E}]0;x\x9d52;c;QUJD\x07${E}]0;x\x9b6n\x07${E}]1;\xff\xfe\x07ok`, "ok"],
    [
      "KAM (locks the keyboard), SRM (local echo), DECANM (VT52), other modes",
      `${E}[2h${E}[12h${E}[12l${E}[?2l${E}[?3h${E}[?1034h${E}[?1036h${E}[3g${E}[?1;2hx`,
      "x",
    ],
    ["screen's title string and locking shifts", `${E}ktitle${E}\\${E}n${E}o${E}|x`, "x"],
  ];
  for (const [name, input, output] of dropped) it(name, () => expect(filter(input)).toBe(output));

  it("a title longer than its bound is dropped, whole", () => {
    expect(filter(`${E}]0;${"t".repeat(TITLE_MAX)}\x07x`)).toBe("x");
    expect(filter(`${E}]0;${"t".repeat(TITLE_MAX - 10)}\x07x`)).toBe(`${E}]0;${"t".repeat(TITLE_MAX - 10)}\x07x`);
  });

  it("holds no more than one bounded sequence: a 16 MiB OSC and a 1 MiB CSI are dropped, and text after them passes", () => {
    const f = new ScreenFilter();
    expect(f.write(Buffer.from(`${E}]52;c;`)).length).toBe(0);
    const body = Buffer.alloc(1024 * 1024, 0x41);
    for (let i = 0; i < 16; i++) expect(f.write(body).length).toBe(0);
    expect(f.write(Buffer.from("\x07after")).toString()).toBe("after");
    const long = `${E}[${"1;".repeat(CSI_MAX)}m tail`;
    // Dropped once too long for any terminal; its remaining bytes are text, the escape gone.
    expect(filter(long)).not.toContain(E);
    expect(filter(long)).toContain(" tail");
  });
});

describe("screen filter: streamed", () => {
  it("a sequence split across chunks at every byte is judged whole", () => {
    const input = `a${E}]52;c;eA==\x07b${E}[1;31mc${E}[6n${utf8("\u009bā").toString("latin1")}${E}]0;t${E}\\`;
    const whole = filter(input);
    expect(whole).toBe(`ab${E}[1;31mc${utf8("ā").toString("latin1")}${E}]0;t${E}\\`);
    for (let at = 1; at < input.length; at++) expect(filter(input, [at]), `split at ${at}`).toBe(whole);
  });

  it("property: chunking never changes the output, filtering twice changes nothing, and nothing dropped is ever emitted", () => {
    const pieces = fc.constantFrom(
      "a",
      "é",
      "\u009b",
      "\u009d",
      "\x9b",
      "\x9d",
      E,
      `${E}[`,
      `${E}]`,
      `${E}P`,
      `${E}_`,
      `${E}\\`,
      "\x07",
      "\x18",
      "52;c;eA==",
      "0;",
      "6n",
      "c",
      "?",
      ">",
      "1049h",
      "21t",
      ";",
      "$p",
      "m",
      "\x05",
      "Z",
      "\n",
      "(",
      "0",
      "\xc2",
      "\xe0",
      "\xf0",
      "\x82",
      "\xa0",
      "\xc0",
      "%",
      "@",
      " ",
      "2h",
      "12h",
      "k",
    );
    fc.assert(
      fc.property(fc.array(pieces, { maxLength: 40 }), fc.array(fc.integer({ min: 0, max: 8 }), { maxLength: 10 }), (parts, cuts) => {
        const input = Buffer.from(parts.join(""), "latin1");
        const once = filter(input);
        expect(filter(input, cuts)).toBe(once);
        expect(filter(Buffer.from(once, "latin1"))).toBe(once);
        expect(once).not.toMatch(/\x1b\](?![012];)/);
        expect(once).not.toMatch(/\x1b[P_^XZ]/);
        expect(once).not.toMatch(/\x1b\[[<=>?]?[0-9;:]*[cnxti]/);
        expect(once).not.toMatch(/\x1b\[[<=>?]?[0-9;:]*\$[pwuy]/);
        expect(once).not.toMatch(/\xc2[\x80-\x9f]|\xe0[\x80-\x9f]|\xf0[\x80-\x8f]|[\xc0\xc1\xf5-\xff]/);
        // Every byte 80–9F left is inside a well-formed UTF-8 sequence.
        expect(
          Buffer.from(once, "latin1")
            .toString("utf8")
            .match(/[\u0080-\u009f]/),
        ).toBeNull();
        expect(once).not.toContain("\x05");
        expect(once).not.toMatch(/\x1b[% k]/);
        expect(once).not.toMatch(/\x1b\[(2|12|\?2)[hl]/);
      }),
      { numRuns: 20_000 },
    );
  });
});

describe("screen filter: restore at detach", () => {
  it("undoes each mode the seat changed, and only those; plain attributes always", () => {
    const f = new ScreenFilter();
    expect(f.restore().toString("latin1")).toBe(`${E}[0m`);
    f.write(Buffer.from(`${E}[?1049h${E}[?1000;1006h${E}[?25l${E}[?2004h${E}=${E}[5;10r${E}[>1u${E}[>1u${E}[<u${E}[>4;1m${E}(0\x0e`, "latin1"));
    const restore = f.restore().toString("latin1");
    expect(restore.startsWith(`${E}[?1049l`)).toBe(true);
    for (const part of [`${E}[?1000l`, `${E}[?1006l`, `${E}[?25h`, `${E}[?2004l`, `${E}>`, `${E}[r`, `${E}[<1u`, `${E}[>4m`, `\x0f${E}(B`])
      expect(restore).toContain(part);
    expect(restore).not.toContain("?1002l");
    const more = new ScreenFilter();
    more.write(Buffer.from(`${E}[4h${E}[?5h${E}[5 q`, "latin1"));
    for (const part of [`${E}[4l`, `${E}[?5l`, `${E}[0 q`]) expect(more.restore().toString("latin1")).toContain(part);
    expect(restore.endsWith(`${E}[0m`)).toBe(true);
  });

  it("counts what it dropped, by kind", () => {
    const f = new ScreenFilter();
    f.write(Buffer.from(`${E}]52;c;eA==\x07${E}]52;c;eA==\x07${E}[6n${E}P${E}\\`, "latin1"));
    expect(Object.fromEntries(f.counts.dropped)).toEqual({ "osc 52": 2, "csi n": 1, dcs: 1 });
  });
});
