import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { OwnerActSchema, RecordType } from "../../src/gen/teamd/v1/ledger_pb.js";
import { encodeProposal, sha256, signingMessage } from "../../src/ledger/codec.js";
import { createDaemonSigner, publicKeyFromRaw, verifySignature } from "../../src/ledger/keys.js";
import { checkOwnerAct, isRefusal, signOwnerAct, stopDraft } from "../../src/ledger/owner-act.js";
import { ownerPublicKey, ownerSign, ownerVerify } from "../../src/ledger/owner-signing.js";
import { seedOf } from "./helpers.js";

describe("Ed25519: node:crypto (daemon) and @noble/ed25519 (owner) interoperate byte for byte", () => {
  const messages = [new Uint8Array(0), new TextEncoder().encode("teamd"), new Uint8Array(200).map((_, i) => i), new Uint8Array(4096).fill(0xa5)];

  for (let k = 0; k < 8; k++) {
    it(`key ${k}: same seed → same public key and identical signatures; each verifies the other's`, async () => {
      const seed = seedOf(`interop:${k}`);
      const daemon = createDaemonSigner(seed);
      const nobleKey = await ownerPublicKey(seed);
      expect(Buffer.from(daemon.publicKey.raw).toString("hex")).toBe(Buffer.from(nobleKey).toString("hex"));
      for (const message of messages) {
        const byNode = daemon.sign(message);
        const byNoble = await ownerSign(seed, message);
        expect(Buffer.from(byNode).toString("hex")).toBe(Buffer.from(byNoble).toString("hex"));
        expect(await ownerVerify(nobleKey, message, byNode)).toBe(true);
        expect(verifySignature(publicKeyFromRaw(nobleKey), message, byNoble)).toBe(true);
      }
    });
  }

  it("a flipped bit fails on both sides; a signature by another key fails", async () => {
    const seed = seedOf("interop:flip");
    const other = createDaemonSigner(seedOf("interop:other"));
    const daemon = createDaemonSigner(seed);
    const message = new TextEncoder().encode("the proposal");
    const sig = daemon.sign(message);
    for (let bit = 0; bit < 512; bit += 37) {
      const bad = sig.slice();
      bad[bit >> 3] = (bad[bit >> 3] as number) ^ (1 << (bit & 7));
      expect(verifySignature(daemon.publicKey, message, bad)).toBe(false);
      expect(await ownerVerify(daemon.publicKey.raw, message, bad)).toBe(false);
    }
    expect(verifySignature(other.publicKey, message, sig)).toBe(false);
    expect(verifySignature(daemon.publicKey, message, new Uint8Array(10))).toBe(false);
  });
});

describe("owner acts", () => {
  it("a signed act checks against the pinned key; its proposal is canonical and signed under the proposal domain", async () => {
    const seed = seedOf("owner-act");
    const key = publicKeyFromRaw(await ownerPublicKey(seed));
    const bytes = await signOwnerAct(stopDraft({ reason: "lunch", nonce: new Uint8Array(16) }), seed);
    const act = checkOwnerAct(bytes, key);
    if (isRefusal(act)) throw new Error(act.reason);
    expect(act.proposal.type).toBe(RecordType.STOP);
    expect(Buffer.from(act.id, "hex")).toEqual(Buffer.from(sha256(encodeProposal(act.proposal))));
    const decoded = fromBinary(OwnerActSchema, bytes);
    expect(verifySignature(key, signingMessage("proposal", decoded.proposal), decoded.signature?.signature ?? new Uint8Array())).toBe(true);
    // The same signature does not pass as a seal or a head: domains differ.
    expect(verifySignature(key, signingMessage("seal", decoded.proposal), decoded.signature?.signature ?? new Uint8Array())).toBe(false);
  });

  it("refuses an act by another key, a swapped payload, a non-canonical proposal, a bad co-signature", async () => {
    const seed = seedOf("owner-act-2");
    const key = publicKeyFromRaw(await ownerPublicKey(seed));
    const draft = stopDraft({ team: "alpha", reason: "x", nonce: new Uint8Array(16) });
    const byOther = await signOwnerAct(draft, seedOf("mallory"));
    expect(checkOwnerAct(byOther, key)).toMatchObject({ rule: "owner.signature" });

    const good = fromBinary(OwnerActSchema, await signOwnerAct(draft, seed));
    const other = fromBinary(OwnerActSchema, await signOwnerAct(stopDraft({ reason: "y" }), seed));
    expect(checkOwnerAct(toBinary(OwnerActSchema, { ...good, payload: other.payload }), key)).toMatchObject({ rule: "owner.act-invalid" });
    // Append a redundant default field encoding (field 2 = "" explicitly): same meaning, other bytes.
    const nonCanonical = new Uint8Array([...good.proposal, 0x12, 0x00]);
    expect(checkOwnerAct(toBinary(OwnerActSchema, { ...good, proposal: nonCanonical }), key)).toMatchObject({
      rule: "owner.act-invalid",
      reason: expect.stringMatching(/canonical/),
    });
    expect(checkOwnerAct(new Uint8Array([1, 2, 3]), key)).toMatchObject({ rule: "owner.act-invalid" });

    const coSigned = fromBinary(OwnerActSchema, await signOwnerAct(draft, seed, { coSignerSeed: seedOf("second granter") }));
    expect(isRefusal(checkOwnerAct(toBinary(OwnerActSchema, coSigned), key))).toBe(false);
    const badCo = { ...coSigned, coSignature: { ...coSigned.coSignature!, signature: good.signature!.signature } };
    expect(checkOwnerAct(toBinary(OwnerActSchema, badCo), key)).toMatchObject({ rule: "owner.signature" });
  });
});
