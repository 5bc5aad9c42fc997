import { statSync } from "node:fs";
import { join, sep } from "node:path";

/**
 * Can a uid reach a path? Every folder on the way needs its search (x) bit for that uid —
 * bwrap opens a seat's bind sources as the seat's uid — so a 0700 folder above TEAMD_HOME, or
 * /root above an nvm node, stops every seat. Used by `teamd start` (before launch) and
 * `teamd doctor`.
 */

/** The first folder on the way to `path` the uid cannot search (x), or undefined. Mode bits only: an ACL that grants more is not read. */
export function untraversable(path: string, uid: number, gid: number): { folder: string; mode: string; owner: string } | undefined {
  if (uid === 0) return undefined;
  const parts = path.split(sep).filter((p) => p !== "");
  let at: string = sep;
  for (const part of ["", ...parts.slice(0, -1)]) {
    at = part === "" ? sep : join(at, part);
    let info;
    try {
      info = statSync(at);
    } catch {
      return undefined; // a folder that is not there is the start's own error
    }
    const bit = info.uid === uid ? 0o100 : info.gid === gid ? 0o010 : 0o001;
    if ((info.mode & bit) === 0) return { folder: at, mode: (info.mode & 0o7777).toString(8).padStart(4, "0"), owner: `uid ${info.uid}, gid ${info.gid}` };
  }
  return undefined;
}
