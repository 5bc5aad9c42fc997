import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { Scrollback } from "../../../daemon/lifecycle/scrollback.js";

describe("the scrollback ring", () => {
  it("keeps exactly the last `capacity` bytes, in order, whatever the chunking", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 64 }), fc.array(fc.uint8Array({ maxLength: 100 }), { maxLength: 30 }), (capacity, chunks) => {
        const ring = new Scrollback(capacity);
        for (const chunk of chunks) ring.push(chunk);
        const all = Buffer.concat(chunks.map((c) => Buffer.from(c)));
        expect(ring.snapshot().equals(all.subarray(Math.max(0, all.length - capacity)))).toBe(true);
      }),
    );
  });

  it("starts empty", () => {
    expect(new Scrollback(8).snapshot().length).toBe(0);
  });
});
