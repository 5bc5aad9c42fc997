import { createPrivateKey, type KeyObject } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { writeFileAtomic } from "../../src/ledger/atomic-file.js";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { generateOwnerSeed, ownerPublicKey } from "../../src/ledger/index.js";

/**
 * The owner's key (§11 "a key on the holder's own device"): an Ed25519 private key in a
 * PKCS#8 PEM file, mode 0600, at ~/.config/teamd/owner.key or TEAMD_OWNER_KEY — never
 * under TEAMD_HOME and never inside any seat's view. Optionally encrypted with a
 * passphrase (encrypted PKCS#8: AES-256-CBC with a PBKDF2-derived key). The seed
 * is held in memory only as long as a command needs it and is never printed.
 */
const PKCS8_ED25519_PREFIX = Uint8Array.from([0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20]);

export function ownerKeyPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.TEAMD_OWNER_KEY) return resolve(env.TEAMD_OWNER_KEY);
  const config = env.XDG_CONFIG_HOME ? resolve(env.XDG_CONFIG_HOME) : join(homedir(), ".config");
  return join(config, "teamd", "owner.key");
}

function keyObjectFromSeed(seed: Uint8Array): KeyObject {
  const der = Buffer.concat([PKCS8_ED25519_PREFIX, seed]);
  return createPrivateKey({ key: der, format: "der", type: "pkcs8" });
}

function seedFromKeyObject(key: KeyObject): Uint8Array {
  if (key.asymmetricKeyType !== "ed25519") throw new Error(`the owner key is ${key.asymmetricKeyType}, not ed25519`);
  const der = key.export({ format: "der", type: "pkcs8" });
  return new Uint8Array(der.subarray(der.length - 32));
}

export interface OwnerKey {
  readonly path: string;
  readonly seed: Uint8Array;
  readonly publicKey: Uint8Array;
}

/** Is the key file encrypted (does loading it need a passphrase)? */
export function isEncrypted(path: string): boolean {
  return readFileSync(path, "utf8").includes("BEGIN ENCRYPTED PRIVATE KEY");
}

export async function loadOwnerKey(path: string, passphrase?: string): Promise<OwnerKey> {
  let pem: string;
  try {
    pem = readFileSync(path, "utf8");
  } catch {
    throw new Error(`no owner key at ${path}: run teamd init (or set TEAMD_OWNER_KEY to your key file)`);
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(passphrase === undefined ? { key: pem } : { key: pem, passphrase });
  } catch {
    throw new Error(
      pem.includes("ENCRYPTED")
        ? `the owner key at ${path} is encrypted and the passphrase is missing or wrong`
        : `the owner key at ${path} cannot be read as a PKCS#8 Ed25519 key`,
    );
  }
  const seed = seedFromKeyObject(key);
  return { path, seed, publicKey: await ownerPublicKey(seed) };
}

/**
 * Create the owner key if absent. Written to a temp file with mode 0600 from the first
 * byte (never a moment world-readable), fsynced, then linked into place.
 */
export async function ensureOwnerKey(path: string, passphrase?: string): Promise<{ key: OwnerKey; created: boolean }> {
  if (existsSync(path)) return { key: await loadOwnerKey(path, passphrase), created: false };
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const seed = generateOwnerSeed();
  const keyObject = keyObjectFromSeed(seed);
  const pem =
    passphrase === undefined
      ? keyObject.export({ format: "pem", type: "pkcs8" })
      : keyObject.export({ format: "pem", type: "pkcs8", cipher: "aes-256-cbc", passphrase });
  // Exclusive: a key that appeared meanwhile is never replaced (that would orphan a ledger).
  await writeFileAtomic(path, Buffer.from(pem), { mode: 0o600, exclusive: true });
  return { key: { path, seed, publicKey: await ownerPublicKey(seed) }, created: true };
}
