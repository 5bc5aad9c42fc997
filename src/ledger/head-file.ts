import { readFile } from "node:fs/promises";
import { basename, dirname } from "node:path";
import { removeStaleTemps, writeFileAtomic } from "./atomic-file.js";
import { describeError } from "./errors.js";
import type { HeadFileWriter } from "./head-file-writer.js";
import type { DaemonSigner, PublicKey } from "./keys.js";
import { makeSignedHead, readSignedHead, type Head } from "./seal.js";

/**
 * The signed head in its own file outside the database (§15 "A trusted head, not a valid
 * prefix"). It is written once per commit batch, atomically, so an update interrupted
 * mid-write leaves the previous head intact; an unreadable or unverifiable head is reported
 * as such, and the ledger fails closed on it rather than trusting the database alone.
 */

export type HeadRead =
  { readonly status: "ok"; readonly head: Head } | { readonly status: "missing" } | { readonly status: "invalid"; readonly reason: string };

export async function readHeadFile(path: string, daemonKey: PublicKey): Promise<HeadRead> {
  let bytes: Uint8Array;
  try {
    bytes = await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { status: "missing" };
    return { status: "invalid", reason: `the head file cannot be read: ${describeError(error)}` };
  }
  try {
    return { status: "ok", head: readSignedHead(bytes, daemonKey) };
  } catch (error) {
    return { status: "invalid", reason: describeError(error) };
  }
}

/** Sign and write the head atomically; through `writer` (a worker thread) when given. */
export async function writeHeadFile(path: string, signer: DaemonSigner, head: Head, writer?: HeadFileWriter): Promise<void> {
  const bytes = makeSignedHead(signer, head);
  if (writer) await writer.write(path, bytes);
  else await writeFileAtomic(path, bytes, { mode: 0o600 });
}

/** Remove temp files an interrupted head write left (only the daemon writes the head). */
export async function cleanHeadTemps(path: string): Promise<void> {
  await removeStaleTemps(dirname(path), basename(path));
}
