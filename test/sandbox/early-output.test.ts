import { describe, expect, it } from "vitest";
import { EarlyOutput, PACK_BYTES } from "../../src/sandbox/early-output.js";

/**
 * The pty's hold of a seat's first output (src/sandbox/early-output.ts): bounded in bytes and in
 * the objects it keeps, whatever the chunks' sizes; in order; dropped past the bound.
 */
const MiB = 1024 * 1024;

describe("EarlyOutput", () => {
  it("one-byte writes past the bound: at most the bound held, packed into few blocks, in order", () => {
    const hold = new EarlyOutput(MiB);
    const total = 2 * MiB;
    for (let i = 0; i < total; i++) hold.hold(Buffer.of(i % 251));
    expect(hold.size).toBe(MiB);
    const out = hold.drain();
    // One object per byte would be a million; packed, a block per PACK_BYTES.
    expect(out.length).toBe(Math.ceil(MiB / PACK_BYTES));
    const joined = Buffer.concat(out);
    expect(joined.length).toBe(MiB);
    for (let i = 0; i < joined.length; i += 9973) expect(joined[i]).toBe(i % 251);
    expect(hold.size).toBe(0);
    expect(hold.drain()).toEqual([]);
  });

  it("large chunks are held as they came, small ones around them packed, and the order kept", () => {
    const hold = new EarlyOutput(MiB);
    const big = Buffer.alloc(PACK_BYTES * 2, 7);
    hold.hold(Buffer.from("a"));
    hold.hold(Buffer.from("bc"));
    hold.hold(big);
    hold.hold(Buffer.from("d"));
    const out = hold.drain();
    expect(out.map((b) => b.length)).toEqual([3, big.length, 1]);
    expect(out[1]).toBe(big);
    expect(Buffer.concat(out).toString("latin1")).toBe(`abc${"\u0007".repeat(big.length)}d`);
  });

  it("a chunk that would pass the bound is dropped whole; a smaller one after it still fits", () => {
    const hold = new EarlyOutput(10);
    hold.hold(Buffer.from("12345678"));
    hold.hold(Buffer.from("abc"));
    hold.hold(Buffer.from("xy"));
    hold.hold(Buffer.alloc(0));
    expect(Buffer.concat(hold.drain()).toString()).toBe("12345678xy");
  });
});
