import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { MessageCounter } from "../../src/rpc/message-count.js";

/** The gRPC message counter of a seat's streams (src/rpc/message-count.ts): named cases, then any framing cut anywhere against a count of the messages made. */

/** gRPC framing: the 5-byte prefix (flag, big-endian length), then the body. */
function framed(body: Uint8Array): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(body.length, 1);
  return Buffer.concat([prefix, body]);
}

describe("counting a stream's gRPC messages", () => {
  it.each<[string, Buffer[], number]>([
    ["nothing", [], 0],
    ["one empty message", [framed(new Uint8Array(0))], 1],
    ["a prefix not yet whole", [Buffer.from([0, 0, 0])], 0],
    ["a prefix whole, its body not yet", [Buffer.from([0, 0, 0, 1, 0])], 1],
    ["a 256-byte message whose length is in byte 3", [framed(new Uint8Array(256)), framed(new Uint8Array(0))], 2],
    ["a message of 70,000 bytes, then one of 1", [framed(new Uint8Array(70_000)), framed(new Uint8Array(1))], 2],
    ["a file write's empty data parts, seven bytes each", [Buffer.concat(Array.from({ length: 2000 }, () => framed(Buffer.from([0x12, 0x00]))))], 2000],
    // The length's high byte counts: a message of 2^24 bytes is one message, not a prefix followed by others.
    ["a message declaring 2^24 bytes, of which 10 came", [Buffer.concat([Buffer.from([0, 1, 0, 0, 0]), Buffer.alloc(10)])], 1],
  ])("%s", (_name, chunks, expected) => {
    const counter = new MessageCounter();
    let count = 0;
    for (const chunk of chunks) count = counter.feed(chunk);
    expect(count).toBe(expected);
  });

  it.each<[string, Buffer[], number]>([
    ["nothing", [], 0],
    ["a whole message", [framed(new Uint8Array(300))], 0],
    ["three bytes of a prefix", [Buffer.from([0, 0, 0])], 3],
    ["a prefix declaring 300 bytes, and 100 of them", [framed(new Uint8Array(300)).subarray(0, 105)], 105],
    [
      "a whole message, then most of another, in pieces",
      [framed(new Uint8Array(10)), framed(new Uint8Array(300)).subarray(0, 50), framed(new Uint8Array(300)).subarray(50, 200)],
      200,
    ],
    ["an empty message", [framed(new Uint8Array(0))], 0],
  ])("what a stream ending now sent for no message: %s", (_name, chunks, expected) => {
    const counter = new MessageCounter();
    for (const chunk of chunks) counter.feed(chunk);
    expect(counter.unfinished()).toBe(expected);
  });

  it("property: messages of any sizes, their bytes cut into chunks anywhere, count as many as were made", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 3000 }), { maxLength: 40 }),
        fc.array(fc.integer({ min: 1, max: 5000 }), { minLength: 1, maxLength: 30 }),
        (sizes, cuts) => {
          const bytes = Buffer.concat(sizes.map((size) => framed(new Uint8Array(size))));
          const counter = new MessageCounter();
          let at = 0;
          let count = 0;
          for (let i = 0; at < bytes.length; i++) {
            const take = cuts[i % cuts.length] as number;
            count = counter.feed(bytes.subarray(at, at + take));
            at += take;
          }
          return count === sizes.length;
        },
      ),
    );
  });
});
