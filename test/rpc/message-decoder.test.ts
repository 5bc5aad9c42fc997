import { StreamDecoder } from "@grpc/grpc-js/build/src/stream-decoder.js";
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { boundMessageDecoding, messageDecodingBound } from "../../src/rpc/message-decoder.js";
import { createRpcServer } from "../../src/rpc/index.js";

/** grpc-js's message decoder as the daemon runs it (src/rpc/message-decoder.ts). */
function framed(body: Buffer): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(body.length, 1);
  return Buffer.concat([prefix, body]);
}

/** The stream cut at the given lengths, then the rest. */
function cut(stream: Buffer, lengths: () => number): Buffer[] {
  const parts: Buffer[] = [];
  for (let at = 0; at < stream.length;) {
    const n = Math.max(1, Math.min(lengths(), stream.length - at));
    parts.push(stream.subarray(at, at + n));
    at += n;
  }
  return parts;
}

describe("bounded message decoding", () => {
  it("is what every rpc server of the daemon decodes with", () => {
    createRpcServer({ socketPath: "/nonexistent/s.sock", access: { mode: 0o600 }, channel: "x" });
    expect(messageDecodingBound()).toBe(true);
  });

  it("gives the same messages, prefix and all, however the stream is cut: whole, in 1-byte chunks, at random", () => {
    boundMessageDecoding();
    const bodies = [Buffer.alloc(0), Buffer.from("a"), randomBytes(70_000), randomBytes(5), Buffer.alloc(0), randomBytes(131_072)];
    const stream = Buffer.concat(bodies.map(framed));
    for (const lengths of [() => stream.length, () => 1, () => 1 + Math.floor(Math.random() * 20_000), () => 4, () => 5, () => 6]) {
      const decoder = new StreamDecoder(256 * 1024);
      const out = cut(stream, lengths).flatMap((part) => decoder.write(part));
      expect(out.map((m) => m.toString("hex"))).toEqual(bodies.map((b) => framed(b).toString("hex")));
    }
  });

  it("refuses a message past the cap from its prefix, in grpc-js's words", () => {
    boundMessageDecoding();
    const decoder = new StreamDecoder(1024);
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(1025, 1);
    expect(() => decoder.write(prefix)).toThrow("Received message larger than max (1025 vs 1024)");
  });

  it("holds a message's prefix alone in 16 KiB, not the 256 KiB it declares: a stream opened and reset in a loop costs what it sent", () => {
    boundMessageDecoding();
    const decoder = new StreamDecoder(256 * 1024);
    expect(decoder.write(framed(randomBytes(256 * 1024 - 1)).subarray(0, 5))).toEqual([]);
    const buffers = Object.values(decoder as unknown as Record<string, unknown>).filter((v): v is Buffer => Buffer.isBuffer(v));
    expect(buffers.reduce((sum, b) => sum + b.length, 0)).toBeLessThanOrEqual(16 * 1024 + 16);
  });

  it("holds an unfinished message sent a byte at a time as one buffer of at most four times what was sent, not a piece per byte", () => {
    boundMessageDecoding();
    const decoder = new StreamDecoder(256 * 1024);
    const stream = framed(randomBytes(256 * 1024 - 1)).subarray(0, 200_000);
    for (const part of cut(stream, () => 1)) expect(decoder.write(part)).toEqual([]);
    const held = Object.values(decoder as unknown as Record<string, unknown>).filter((v) => Buffer.isBuffer(v) || Array.isArray(v));
    // grpc-js's own decoder held 199,995 slices in an array here.
    for (const value of held) if (Array.isArray(value)) expect(value.length).toBeLessThan(16);
    const buffers = held.filter((v): v is Buffer => Buffer.isBuffer(v));
    expect(buffers.reduce((sum, b) => sum + b.length, 0)).toBeLessThan(256 * 1024 + 64);
  });
});
