import { open, type FileHandle } from "node:fs/promises";
import { constants } from "node:fs";
import { infoFromStats, identityFailure, type ObjectInfo } from "./identity.js";
import { objectKey, sameStamp, type ObjectStamp } from "./object-id.js";

/**
 * Authorization holds on the opened object (§6 "checked on the opened object and stays
 * stable through use"). A check on a path and a later open of the same path can reach two
 * different objects — the name was renamed, replaced or re-linked in between. So: open
 * first, then fstat the open descriptor and compare its identity with the one that was
 * checked. What was opened is what was authorized, or nothing is used.
 */
export type OpenVerifiedResult =
  | { readonly ok: true; readonly handle: FileHandle; readonly info: ObjectInfo }
  | { readonly ok: false; readonly rule: "object.identity"; readonly reason: string };

/**
 * Open `path` and return the handle only when it is the expected object. O_NONBLOCK keeps a
 * name swapped for a FIFO from hanging the open before the comparison can refuse it;
 * O_NOCTTY keeps a swapped-in terminal from becoming ours. On any mismatch the descriptor is
 * closed before returning. Pass the checked object's `stamp` (ObjectInfo.stamp): with its birth
 * time, a new file that reuses a deleted object's inode number is told apart; a bare
 * (dev, ino) cannot tell them apart.
 */
export async function openVerified(path: string, expected: ObjectStamp, flags: number = constants.O_RDONLY): Promise<OpenVerifiedResult> {
  let handle: FileHandle;
  try {
    handle = await open(path, flags | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    return { ok: false, rule: "object.identity", reason: identityFailure(path, error).reason };
  }
  try {
    const found = infoFromStats(await handle.stat({ bigint: true }), path);
    if (!found.ok) {
      await handle.close();
      return { ok: false, rule: "object.identity", reason: found.reason };
    }
    if (!sameStamp(found.info.stamp, expected)) {
      await handle.close();
      return {
        ok: false,
        rule: "object.identity",
        reason: `${path} is no longer the object that was checked (expected ${objectKey(expected)}, opened ${objectKey(found.info.id)}); it was replaced in between`,
      };
    }
    return { ok: true, handle, info: found.info };
  } catch (error) {
    await handle.close().catch(() => undefined);
    return { ok: false, rule: "object.identity", reason: identityFailure(path, error).reason };
  }
}
