import { randomBytes } from "node:crypto";

/**
 * The owner's side of Ed25519, through @noble/ed25519 v3: portable pure JS, so it runs
 * wherever the owner's key lives (a laptop, a phone bridge), not only where node:crypto is.
 * Only the async API is used: it takes SHA-512 from WebCrypto and so needs no global
 * `ed.hashes.sha512` assignment — setting that would be module-level mutable state shared
 * with every other user of the library in the process.
 *
 * The library is loaded on first use: the daemon verifies with node:crypto and never needs
 * it, and its first scalar multiplication builds tables (~0.2 s) a daemon need not pay.
 *
 * The secret key is the raw 32-byte seed. It is an argument, used and dropped; nothing here
 * stores, logs or returns it.
 */

const noble = () => import("@noble/ed25519");

export async function ownerPublicKey(seed: Uint8Array): Promise<Uint8Array> {
  return (await noble()).getPublicKeyAsync(seed);
}

export async function ownerSign(seed: Uint8Array, message: Uint8Array): Promise<Uint8Array> {
  return (await noble()).signAsync(message, seed);
}

/**
 * Verification with noble, for owner-side tools that have no node:crypto. `zip215: false`
 * is RFC 8032's strict rule, the one node:crypto applies, so both sides accept exactly the
 * same signatures.
 */
export async function ownerVerify(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): Promise<boolean> {
  try {
    return await (await noble()).verifyAsync(signature, message, publicKey, { zip215: false });
  } catch {
    return false;
  }
}

/** A fresh 32-byte seed from the platform's CSPRNG (an Ed25519 secret key is 32 random bytes). */
export function generateOwnerSeed(): Uint8Array {
  return new Uint8Array(randomBytes(32));
}
