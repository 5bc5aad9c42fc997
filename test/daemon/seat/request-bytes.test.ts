import { describe, expect, it } from "vitest";
import { requestBytes } from "../../../daemon/seat/pipeline.js";

/** The digest a request id is bound to (§15): equal parts, equal digest; any other list of parts, another. */
const hex = (parts: (string | Uint8Array)[]) => Buffer.from(requestBytes(parts)).toString("hex");

describe("requestBytes", () => {
  it("is the same for the same parts", () => {
    expect(hex(["merge", "seat/w/x", ""])).toBe(hex(["merge", "seat/w/x", ""]));
  });

  it.each([
    ["a NUL moved across a boundary", ["a\0b", "c"], ["a", "b\0c"]],
    ["two parts against their concatenation", ["ab"], ["a", "b"]],
    ["an empty part added", ["a"], ["a", ""]],
    ["a string against the same bytes", ["a"], [new TextEncoder().encode("a")]],
    ["a length that looks like a prefix", ["1:a"], ["", "a"]],
  ])("tells apart %s", (_name, a, b) => {
    expect(hex(a as (string | Uint8Array)[])).not.toBe(hex(b as (string | Uint8Array)[]));
  });
});
