import { describe, expect, it } from "vitest";
import { terminalJson, terminalLines, terminalText } from "../../../daemon/host/terminal-text.js";

/** What a terminal would act on, made visible; what it would only show, passed as it is. */
describe("terminalText", () => {
  it.each([
    ["OSC 52 (a clipboard write)", "refs/heads/\u001b]52;c;Y3VybCBldmlsfHNo\u0007x", "refs/heads/\\x1b]52;c;Y3VybCBldmlsfHNo\\x07x"],
    ["erase the line, cursor up", "ok\u001b[2K\u001b[1A", "ok\\x1b[2K\\x1b[1A"],
    ["an 8-bit CSI (C1)", "a\u009b31mb", "a\\x9b31mb"],
    ["DEL and NUL", "a\u007fb\u0000c", "a\\x7fb\\x00c"],
    ["a newline, a carriage return and a tab (a field is one line)", "a\nb\rc\td", "a\\nb\\rc\\td"],
    ["a right-to-left override and an isolate", "evil\u202egnp.exe\u2066x\u2069", "evil\\u202egnp.exe\\u2066x\\u2069"],
    ["a line separator", "a\u2028b", "a\\u2028b"],
    ["a backslash, so no escape can be forged", "a\\x1b", "a\\\\x1b"],
  ])("escapes %s", (_what, text, shown) => {
    expect(terminalText(text)).toBe(shown);
  });
  it.each([
    ["plain ASCII", "refs/heads/seat/w1/feature-1"],
    ["other scripts", "ünïcødé — 日本語 — עברית"],
    ["emoji", "✅ 🚀"],
  ])("passes %s as it is", (_what, text) => {
    expect(terminalText(text)).toBe(text);
  });
});

describe("terminalJson", () => {
  it("escapes C1 and bidirectional controls as \\u, which parse back to the same text", () => {
    const value = { target: "a\u009b31m\u202eb\u001bc" };
    const json = terminalJson(JSON.stringify(value));
    expect(json).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e]/);
    expect(JSON.parse(json)).toEqual(value);
  });
});

describe("terminalLines", () => {
  it("keeps a view's newlines and escapes what is inside its lines", () => {
    expect(terminalLines("seat w1  running\nreason: x\u001b]0;title\u0007\n")).toBe("seat w1  running\nreason: x\\x1b]0;title\\x07\n");
  });
});
