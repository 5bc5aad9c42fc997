import { create, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { SealSchema, SealStatementSchema, SignedHeadSchema } from "../../src/gen/teamd/v1/ledger_pb.js";
import { createDaemonSigner } from "../../src/ledger/keys.js";
import { makeSeal, makeSignedHead, parseSealStatement, readSeal, readSignedHead } from "../../src/ledger/seal.js";
import { seedOf } from "./helpers.js";

const signer = createDaemonSigner(seedOf("seal"));
const hash = (n: number) => new Uint8Array(32).fill(n);

describe("seals and heads", () => {
  it("the hand-written statement reader agrees with protobuf-es on every shape a seal takes", () => {
    for (const [first, count] of [
      [0, 1],
      [1, 1],
      [127, 1],
      [128, 3],
      [300, 64],
      [2 ** 31, 2],
      [2 ** 40 + 5, 1],
      [Number.MAX_SAFE_INTEGER - 1, 2],
    ] as const) {
      const hashes = Array.from({ length: count }, (_, i) => hash(i + 1));
      const bytes = toBinary(
        SealStatementSchema,
        create(SealStatementSchema, { firstSeq: BigInt(first), lastSeq: BigInt(first + count - 1), headerHashes: hashes, keyId: signer.publicKey.keyId }),
      );
      expect(parseSealStatement(bytes)).toEqual({ firstSeq: first, lastSeq: first + count - 1, headerHashes: hashes, keyId: signer.publicKey.keyId });
      const seal = readSeal(makeSeal(signer, first, hashes), signer.publicKey, true);
      expect(seal).toEqual({ firstSeq: first, lastSeq: first + count - 1, headerHashes: hashes });
    }
  });

  it("refuses every encoding but the canonical one", () => {
    const good = toBinary(SealStatementSchema, create(SealStatementSchema, { firstSeq: 5n, lastSeq: 5n, headerHashes: [hash(1)], keyId: hash(2) }));
    expect(() => parseSealStatement(good)).not.toThrow();
    const bad = [
      new Uint8Array([0x08, 0x00, ...good.subarray(2)]), // explicit zero first seq
      new Uint8Array([0x08, 0x85, 0x00, ...good.subarray(2)]), // non-minimal varint
      new Uint8Array([...good, 0x28, 0x01]), // unknown trailing field
      new Uint8Array([0x10, 0x05, 0x08, 0x05, ...good.subarray(4)]), // fields out of order
      good.subarray(0, good.length - 1), // truncated
      toBinary(SealStatementSchema, create(SealStatementSchema, { firstSeq: 5n, lastSeq: 5n, headerHashes: [new Uint8Array(31)], keyId: hash(2) })),
    ];
    for (const bytes of bad) expect(() => parseSealStatement(bytes), Buffer.from(bytes).toString("hex")).toThrow(/canonical/);
    // The wrapper too: a wrong wire type on the statement tag decodes in protobuf-es, never here.
    const seal = makeSeal(signer, 1, [hash(1)]);
    const wrongWireType = seal.slice();
    wrongWireType[0] = 0x0b;
    expect(() => readSeal(wrongWireType, signer.publicKey, true)).toThrow(/canonical/);
    expect(() => readSeal(new Uint8Array([...seal, 0]), signer.publicKey, true)).toThrow(/canonical/);
    expect(() => readSeal(seal, createDaemonSigner(seedOf("other")).publicKey, true)).toThrow(/signature/);
    expect(toBinary(SealSchema, create(SealSchema, { statement: new Uint8Array([1]), signature: new Uint8Array(64) }))[0]).toBe(0x0a);
  });

  it("a head reads back only with the daemon's key and in canonical form", () => {
    const head = { seq: 42, hash: hash(9), timeUnixMs: 1_800_000_000_000 };
    const bytes = makeSignedHead(signer, head);
    expect(readSignedHead(bytes, signer.publicKey)).toEqual(head);
    expect(() => readSignedHead(bytes, createDaemonSigner(seedOf("other")).publicKey)).toThrow();
    const lenient = bytes.slice();
    lenient[0] = 0x0b;
    expect(() => readSignedHead(lenient, signer.publicKey)).toThrow();
    expect(SignedHeadSchema.typeName).toBe("teamd.v1.SignedHead");
  });
});
