import { afterEach, describe, expect, it, vi } from "vitest";
import { formatUuid4, randomUUID } from "../../shim/request-id.js";

const UUID4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/**
 * The shim's request ids (shim/request-id.ts): version 4 UUIDs from /dev/urandom, without the
 * global Web Crypto object, whose first use loads node's crypto modules (~3 ms of every act).
 */
describe("teamd-shim: request ids", () => {
  afterEach(() => vi.restoreAllMocks());

  it("are version 4 UUIDs, each one new, read without the global crypto object", () => {
    const global = vi.spyOn(globalThis.crypto, "randomUUID");
    const ids = Array.from({ length: 2000 }, () => randomUUID());
    for (const id of ids) expect(id).toMatch(UUID4);
    expect(new Set(ids).size).toBe(ids.length);
    expect(global).not.toHaveBeenCalled();
  });

  it("use every random bit but the version's and the variant's", () => {
    // Each of the 122 random bits is seen both ways over a few hundred ids (a byte read twice, or
    // one left zero, would fix some).
    const ones = new Array<number>(32).fill(0);
    const n = 400;
    for (let i = 0; i < n; i++) {
      const hex = randomUUID().replace(/-/g, "");
      for (let d = 0; d < 32; d++) ones[d] = (ones[d] as number) + (Number.parseInt(hex[d] as string, 16) > 7 ? 1 : 0);
    }
    for (const [digit, count] of ones.entries()) {
      if (digit === 12)
        expect(count).toBe(0); // the version, 4
      else if (digit === 16)
        expect(count).toBe(n); // the variant, 8-b
      else {
        expect(count).toBeGreaterThan(n * 0.3);
        expect(count).toBeLessThan(n * 0.7);
      }
    }
  });

  it("puts the version and the variant in their places, whatever the bytes", () => {
    expect(formatUuid4(new Uint8Array(16).fill(0xff))).toBe("ffffffff-ffff-4fff-bfff-ffffffffffff");
    expect(formatUuid4(new Uint8Array(16))).toBe("00000000-0000-4000-8000-000000000000");
    expect(formatUuid4(Uint8Array.from({ length: 16 }, (_, i) => i))).toBe("00010203-0405-4607-8809-0a0b0c0d0e0f");
    expect(() => formatUuid4(new Uint8Array(15))).toThrow(/16 random bytes/);
  });
});
