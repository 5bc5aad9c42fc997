import { describe, expect, it } from "vitest";
import { lastPlainLines, plainLines } from "../../../daemon/host/plain-text.js";

/** A seat's terminal output as plain lines (teamd logs, a failed start's last lines): escapes dropped whole, never played. */
describe("plainLines", () => {
  it.each([
    ["plain lines", "a\nb\n", ["a", "b"]],
    ["CRLF", "a\r\nb\r\n", ["a", "b"]],
    ["SGR colours", "\u001b[1;31mred\u001b[0m text\n", ["red text"]],
    ["8-bit CSI", "\u009b2Jclear\n", ["clear"]],
    ["cursor moves and erase", "\u001b[2K\u001b[1Gline\n", ["line"]],
    ["OSC title, BEL", "\u001b]0;evil title\u0007after\n", ["after"]],
    ["OSC 52 clipboard, ST", "\u001b]52;c;ZXZpbA==\u001b\\after\n", ["after"]],
    ["8-bit OSC", "\u009d0;t\u009cafter\n", ["after"]],
    ["DCS", "\u001bPq#0;2;0;0;0\u001b\\after\n", ["after"]],
    ["two-byte escapes", "\u001b7\u001b(Bsaved\u001b8\n", ["saved"]],
    ["carriage return keeps the last write", "10%\r50%\r100%\n", ["100%"]],
    ["backspace takes one back", "abc\b\bX\n", ["aX"]],
    ["other controls dropped, tab kept", "a\u0000\u0007b\tc\u007f\n", ["ab\tc"]],
    ["a sequence cut at the end", "text\u001b[3", ["text"]],
    ["an unterminated OSC at the end", "text\u001b]0;tit", ["text"]],
    ["other scripts pass", "héllo 世界\n", ["héllo 世界"]],
    ["no trailing newline", "last", ["last"]],
    ["empty lines kept", "a\n\nb\n", ["a", "", "b"]],
  ])("%s", (_name, input, expected) => {
    expect(plainLines(input)).toEqual(expected);
  });

  it("never lets an ESC or a C1 control through, for any byte soup", () => {
    const bytes = Buffer.alloc(4096);
    for (let i = 0; i < bytes.length; i += 1) bytes[i] = (i * 7919 + 13) % 256;
    for (const line of plainLines(bytes)) expect(line).not.toMatch(/[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/);
  });

  it("lastPlainLines keeps the last n", () => {
    expect(lastPlainLines(Buffer.from("1\n2\n3\n4\n"), 2)).toEqual(["3", "4"]);
    expect(lastPlainLines(Buffer.from("1\n"), 0)).toEqual([]);
  });
});
