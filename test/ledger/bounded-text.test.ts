import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { boundEchoes, boundText, cutMarker, utf8Bytes } from "../../src/ledger/bounded-text.js";

const hex = (s: string) => createHash("sha256").update(Buffer.from(s, "utf8")).digest("hex");

/** Issue 20 "Records are bounded": the one truncation every seat-supplied string in a record goes through. */
describe("boundText", () => {
  const cases: { description: string; value: string; max: number }[] = [
    { description: "empty", value: "", max: 16 },
    { description: "ASCII under the bound", value: "src/a.txt", max: 16 },
    { description: "ASCII exactly at the bound", value: "x".repeat(200), max: 200 },
    { description: "ASCII one byte over", value: "x".repeat(201), max: 200 },
    { description: "a multi-MiB path", value: `src/${"a/".repeat(2 * 1024 * 1024)}f`, max: 512 },
    { description: "two-byte characters across the cut", value: "é".repeat(1000), max: 201 },
    { description: "three-byte characters across the cut", value: "€".repeat(1000), max: 202 },
    { description: "four-byte characters (emoji) across the cut", value: "😀".repeat(1000), max: 203 },
    { description: "mixed widths", value: "a€😀é".repeat(500), max: 300 },
    { description: "a bound smaller than the marker", value: "y".repeat(1000), max: 10 },
    { description: "a reason with its fix at the end", value: `'${"p".repeat(100_000)}' is not a repository path: fix: name a path under the root`, max: 2048 },
  ];
  it.each(cases)("$description", ({ value, max }) => {
    const out = boundText(value, max);
    const bytes = utf8Bytes(value);
    if (bytes <= max) {
      expect(out).toBe(value);
      return;
    }
    const marker = cutMarker(bytes, hex(value));
    // The original's length and hash are in the result, whatever the bound.
    expect(out).toContain(marker);
    // Within the bound, unless the bound is below the marker itself.
    expect(utf8Bytes(out)).toBeLessThanOrEqual(Math.max(max, utf8Bytes(marker)));
    // Never cut inside a UTF-8 sequence: the result round-trips without a replacement character.
    expect(out.includes("\uFFFD")).toBe(false);
    expect(Buffer.from(out, "utf8").toString("utf8")).toBe(out);
    // Head and tail are the original's own bytes.
    const [head, tail] = out.split(marker) as [string, string];
    expect(value.startsWith(head)).toBe(true);
    expect(value.endsWith(tail)).toBe(true);
    if (max > utf8Bytes(marker) + 8) expect(head.length).toBeGreaterThan(0);
  });

  it("keeps a reason's fix at its end", () => {
    const out = boundText(`'${"p".repeat(100_000)}' is not a repository path: fix: name a path under the root`, 2048);
    expect(out.endsWith("fix: name a path under the root")).toBe(true);
  });

  it("tells two long inputs with the same head and tail apart", () => {
    const a = `${"a".repeat(5000)}1${"z".repeat(5000)}`;
    const b = `${"a".repeat(5000)}2${"z".repeat(5000)}`;
    expect(boundText(a, 256)).not.toBe(boundText(b, 256));
  });
});

describe("boundEchoes", () => {
  const path = `docs/${"a".repeat(10_000)}`;
  const cases: { description: string; text: string; inputs: string[]; expected: (out: string) => boolean }[] = [
    {
      description: "a long input echoed in the reason is cut with its own length and hash",
      text: `path '${path}' is outside every read scope; fix: ask`,
      inputs: [path],
      expected: (out) => out.includes(cutMarker(utf8Bytes(path), hex(path))) && out.endsWith("; fix: ask"),
    },
    {
      description: "every echo of it, twice",
      text: `${path} and ${path}`,
      inputs: [path],
      expected: (out) => out.split(cutMarker(utf8Bytes(path), hex(path))).length === 3,
    },
    { description: "a short input stays", text: "path 'src/a' is outside", inputs: ["src/a"], expected: (out) => out === "path 'src/a' is outside" },
    { description: "an input not in the text changes nothing", text: "no echo", inputs: [path], expected: (out) => out === "no echo" },
    {
      description: "the longer of two nested inputs is cut first",
      text: `x ${path}/more y`,
      inputs: [path, `${path}/more`],
      expected: (out) => out.includes(cutMarker(utf8Bytes(`${path}/more`), hex(`${path}/more`))),
    },
  ];
  it.each(cases)("$description", ({ text, inputs, expected }) => {
    const out = boundEchoes(text, inputs, 512);
    expect(expected(out)).toBe(true);
  });
});
