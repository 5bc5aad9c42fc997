import { createPrivateKey, createPublicKey, generateKeyPairSync, sign as nodeSign, verify as nodeVerify, type KeyObject } from "node:crypto";
import { open, readFile } from "node:fs/promises";
import { dirname } from "node:path";
import { sha256 } from "./codec.js";
import { fsyncDir } from "./atomic-file.js";

/**
 * Ed25519 keys on the daemon's side, through node:crypto's native implementation (about ten
 * times faster than a portable one here): the daemon seals every commit batch and signs the
 * head on its hot path, and verifies every signature of a long ledger. The owner signs with
 * @noble/ed25519 (owner-signing.ts); both are RFC 8032 Ed25519, so the same seed gives the
 * same signatures byte for byte (test/ledger/signing.test.ts proves it).
 */

/** DER prefixes that wrap a raw 32-byte Ed25519 seed (PKCS#8) or public key (SPKI). */
const PKCS8_ED25519_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");
const SPKI_ED25519_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

export interface PublicKey {
  /** Raw 32-byte Ed25519 public key, as genesis pins it. */
  readonly raw: Uint8Array;
  /** SHA-256 of raw: how records name the key. */
  readonly keyId: Uint8Array;
  readonly keyObject: KeyObject;
}

/**
 * The daemon's signing key. The private half stays inside a KeyObject: it has no accessor
 * here, so it cannot end up in a record, a log line or an error message.
 */
export interface DaemonSigner {
  readonly publicKey: PublicKey;
  sign(message: Uint8Array): Uint8Array;
}

export function publicKeyFromRaw(raw: Uint8Array): PublicKey {
  if (raw.byteLength !== 32) throw new Error(`an Ed25519 public key is 32 bytes, got ${raw.byteLength}`);
  const keyObject = createPublicKey({ key: Buffer.concat([SPKI_ED25519_PREFIX, raw]), format: "der", type: "spki" });
  return Object.freeze({ raw: new Uint8Array(raw), keyId: sha256(raw), keyObject });
}

function rawPublicOf(keyObject: KeyObject): Uint8Array {
  const der = createPublicKey(keyObject).export({ format: "der", type: "spki" });
  return new Uint8Array(der.subarray(der.byteLength - 32));
}

function signerFromKeyObject(privateKey: KeyObject): DaemonSigner {
  if (privateKey.asymmetricKeyType !== "ed25519") throw new Error("the daemon key must be an Ed25519 key");
  const publicKey = publicKeyFromRaw(rawPublicOf(privateKey));
  return Object.freeze({
    publicKey,
    sign: (message: Uint8Array) => new Uint8Array(nodeSign(null, message, privateKey)),
  });
}

/** A signer from a raw 32-byte seed (the form @noble/ed25519 uses as its secret key). */
export function createDaemonSigner(seed: Uint8Array): DaemonSigner {
  if (seed.byteLength !== 32) throw new Error("an Ed25519 seed is 32 bytes");
  const privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: "der", type: "pkcs8" });
  return signerFromKeyObject(privateKey);
}

/** Verify with node:crypto. Malformed input is a failed verification, never a throw. */
export function verifySignature(key: PublicKey, message: Uint8Array, signature: Uint8Array): boolean {
  if (signature.byteLength !== 64) return false;
  try {
    return nodeVerify(null, message, key.keyObject, signature);
  } catch {
    return false;
  }
}

/**
 * Create the daemon key file (PKCS#8 PEM, mode 0600) if it does not exist, and return the
 * signer. Creation is exclusive (`wx`), fsynced, and its directory fsynced, so two racing
 * inits cannot leave two different keys; an existing file is read, never replaced.
 */
export async function loadOrCreateDaemonKey(path: string): Promise<{ signer: DaemonSigner; created: boolean }> {
  try {
    return { signer: await loadDaemonKey(path), created: false };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const { privateKey } = generateKeyPairSync("ed25519");
  const pem = privateKey.export({ format: "pem", type: "pkcs8" });
  let handle;
  try {
    handle = await open(path, "wx", 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return { signer: await loadDaemonKey(path), created: false };
    throw error;
  }
  try {
    await handle.writeFile(pem);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await fsyncDir(dirname(path));
  return { signer: signerFromKeyObject(privateKey), created: true };
}

export async function loadDaemonKey(path: string): Promise<DaemonSigner> {
  const pem = await readFile(path, "utf8");
  return signerFromKeyObject(createPrivateKey({ key: pem, format: "pem" }));
}
