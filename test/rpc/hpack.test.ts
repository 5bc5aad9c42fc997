import { describe, expect, it } from "vitest";
import { encodeHeaders, HpackDecoder, HpackError, huffmanDecode, HUFFMAN_LENGTHS } from "../../src/rpc/hpack.js";

/**
 * HPACK (src/rpc/hpack.ts): the Huffman code is the RFC's (complete, canonical, EOS thirty 1
 * bits, its examples decode), the decoder reads RFC 7541 Appendix C's header blocks with the
 * dynamic table they build, and every malformed or oversized input is an HpackError, never a
 * wrong header or an unbounded allocation. Interop with a real encoder (nghttp2, through
 * node:http2's server) is in h2-client.test.ts.
 */
const hex = (text: string) => Buffer.from(text.replace(/\s+/g, ""), "hex");
const decoder = (maxTableSize = 4096, maxListSize = 65_536) => new HpackDecoder({ maxTableSize, maxListSize });

describe("the Huffman code", () => {
  it("is complete: the lengths fill the code space exactly (Kraft's sum is 1), 257 symbols with EOS", () => {
    expect(HUFFMAN_LENGTHS).toHaveLength(257);
    const sum = HUFFMAN_LENGTHS.reduce((total, bits) => total + 2 ** (30 - bits), 0);
    expect(sum).toBe(2 ** 30);
  });

  it.each([
    ["www.example.com", "f1e3 c2e5 f23a 6ba0 ab90 f4ff"],
    ["no-cache", "a8eb 1064 9cbf"],
    ["custom-key", "25a8 49e9 5ba9 7d7f"],
    ["custom-value", "25a8 49e9 5bb8 e8b4 bf"],
  ])("decodes RFC 7541's example %j", (text, coded) => {
    expect(huffmanDecode(hex(coded))).toBe(text);
  });

  it("refuses EOS inside a string, padding past 7 bits, and padding that is not 1s", () => {
    // Thirty 1 bits are EOS; padded to 32 with two more 1s.
    expect(() => huffmanDecode(hex("ffff ffff"))).toThrow(HpackError);
    // "0" is 00000 (5 bits): then 11 bits of 1s is padding past 7 bits.
    expect(() => huffmanDecode(Buffer.from([0b00000111, 0b11111111]))).toThrow(/padding longer/);
    // "0" then 000: padding of 0s.
    expect(() => huffmanDecode(Buffer.from([0b00000000]))).toThrow(/padding that is not/);
    expect(huffmanDecode(Buffer.from([0b00000111]))).toBe("0");
  });
});

describe("the decoder", () => {
  it("reads RFC 7541 C.3's three requests, building and reading the dynamic table", () => {
    const d = decoder();
    expect(d.decode(hex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d"))).toEqual([
      [":method", "GET"],
      [":scheme", "http"],
      [":path", "/"],
      [":authority", "www.example.com"],
    ]);
    expect(d.decode(hex("8286 84be 5808 6e6f 2d63 6163 6865"))).toEqual([
      [":method", "GET"],
      [":scheme", "http"],
      [":path", "/"],
      [":authority", "www.example.com"],
      ["cache-control", "no-cache"],
    ]);
    expect(d.decode(hex("8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65"))).toEqual([
      [":method", "GET"],
      [":scheme", "https"],
      [":path", "/index.html"],
      [":authority", "www.example.com"],
      ["custom-key", "custom-value"],
    ]);
  });

  it("reads C.4's first request, Huffman-coded", () => {
    expect(decoder().decode(hex("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff"))).toEqual([
      [":method", "GET"],
      [":scheme", "http"],
      [":path", "/"],
      [":authority", "www.example.com"],
    ]);
  });

  it("evicts the oldest entries past its size, and an entry larger than the table empties it", () => {
    // A table of 100 octets: one entry of 32 + 3 + 5 = 40 fits twice, not three times.
    const d = decoder(100);
    const literal = (name: string, value: string) => Buffer.from([0x40, name.length, ...Buffer.from(name), value.length, ...Buffer.from(value)]);
    d.decode(Buffer.concat([literal("aaa", "11111"), literal("bbb", "22222"), literal("ccc", "33333")]));
    // Index 62 is the newest, 63 the one before; 64 was evicted.
    expect(d.decode(Buffer.from([0x80 | 62, 0x80 | 63]))).toEqual([
      ["ccc", "33333"],
      ["bbb", "22222"],
    ]);
    expect(() => d.decode(Buffer.from([0x80 | 64]))).toThrow(/past the dynamic table/);
    d.decode(literal("x".repeat(40), "y".repeat(40)));
    expect(() => d.decode(Buffer.from([0x80 | 62]))).toThrow(/past the dynamic table/);
  });

  it.each([
    ["index 0", "80", /index 0/],
    ["an index past both tables", "be", /past the dynamic table/],
    ["a size update above what was announced (4097)", "3fe2 1f", /past the 4096 announced/],
    ["a size update after a field", "82 20", /after a header field/],
    ["an integer past 2^31", "ff ff ff ff ff 0f", /past 2\^31/],
    ["a block ending inside an integer", "ff", /inside an integer/],
    ["a string longer than its block", "00 05 61", /longer than its header block/],
    ["a block ending before a value", "00 01 61", /before a string/],
  ])("refuses %s", (_what, block, message) => {
    expect(() => decoder().decode(hex(block))).toThrow(message);
  });

  it("refuses a header list past its bound, however it is made (the same indexed field repeated)", () => {
    const d = decoder(4096, 1000);
    // :status 200 is 7 + 3 + 32 = 42 octets: 24 of them pass, 25 do not.
    expect(d.decode(Buffer.alloc(23, 0x88))).toHaveLength(23);
    expect(() => d.decode(Buffer.alloc(24, 0x88))).toThrow(/past 1000 octets/);
  });

  it("a size update to 0 empties the table", () => {
    const d = decoder();
    d.decode(hex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d"));
    expect(() => d.decode(hex("20 be"))).toThrow(/past the dynamic table/);
  });
});

describe("the encoder", () => {
  it("writes literals never indexed that the decoder reads back, long values included", () => {
    const fields: [string, string][] = [
      [":method", "POST"],
      [":path", "/teamd.v1.ShimService/WhoAmI"],
      ["grpc-timeout", "30000m"],
      ["x-long", "v".repeat(300)],
    ];
    const block = encodeHeaders(fields);
    expect(block[0]).toBe(0x10);
    expect(decoder().decode(block)).toEqual(fields);
  });

  it("refuses what is not printable ASCII (a header the client sends is its own; a newline in one is a bug)", () => {
    expect(() => encodeHeaders([["x", "a\nb"]])).toThrow(HpackError);
    expect(() => encodeHeaders([["x", "é"]])).toThrow(HpackError);
  });
});
