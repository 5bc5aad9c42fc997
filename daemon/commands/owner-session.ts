import { existsSync } from "node:fs";
import { isEncrypted, loadOwnerKey, ownerKeyPath, type OwnerKey } from "../host/owner-key.js";
import { ownerPassphrase } from "./prompt.js";

/** The owner's key for one command: loaded (asking for its passphrase if it has one), used, dropped. */
export async function ownerKeyForAct(): Promise<OwnerKey> {
  const path = ownerKeyPath();
  if (!existsSync(path)) throw new Error(`no owner key at ${path}: run teamd init first (or set TEAMD_OWNER_KEY)`);
  return loadOwnerKey(path, isEncrypted(path) ? await ownerPassphrase() : undefined);
}
