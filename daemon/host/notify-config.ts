import { lstatSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { unlink } from "node:fs/promises";
import { writeFileAtomic } from "../../src/ledger/atomic-file.js";
import type { TeamdHome } from "./home.js";

/**
 * The owner's notice hook: one command (argv, no shell) the daemon runs for every notice —
 * `notify-send`, a mail script, a chat webhook client. It lives in `TEAMD_HOME/notify.json`,
 * written by `teamd notices hook` and read by the daemon at start and on SIGHUP. The file is
 * the owner's: it must be a regular file of the daemon's user, not writable by anyone else
 * (a hook anyone could rewrite would run their command as the daemon), or it is refused and
 * no hook runs (the notices are still recorded).
 */
export interface NotifyHook {
  readonly command: readonly string[];
}

export type NotifyLoad = { readonly ok: true; readonly hook: NotifyHook | undefined } | { readonly ok: false; readonly reason: string };

export const notifyConfigPath = (home: TeamdHome): string => join(home.root, "notify.json");

export function loadNotifyHook(home: TeamdHome): NotifyLoad {
  const path = notifyConfigPath(home);
  let st;
  try {
    st = lstatSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { ok: true, hook: undefined };
    return { ok: false, reason: `${path}: ${(error as Error).message}` };
  }
  if (!st.isFile()) return { ok: false, reason: `${path} is not a regular file` };
  if (st.uid !== process.getuid?.())
    return { ok: false, reason: `${path} belongs to uid ${st.uid}, not the daemon's user: remove it and set the hook again with teamd notices hook` };
  if ((st.mode & 0o022) !== 0) return { ok: false, reason: `${path} is writable by group or others: chmod 600 ${path}` };
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    return { ok: false, reason: `${path} is not JSON: ${(error as Error).message}` };
  }
  const command = (data as { command?: unknown } | null)?.command;
  if (!Array.isArray(command) || command.length === 0 || command.some((a) => typeof a !== "string") || command[0] === "") {
    return { ok: false, reason: `${path}: "command" must be a non-empty list of arguments, e.g. ["notify-send", "teamd"]` };
  }
  return { ok: true, hook: { command: Object.freeze([...(command as string[])]) } };
}

/** Set (or with an empty command, clear) the hook; the daemon picks it up on SIGHUP or its next start. */
export async function saveNotifyHook(home: TeamdHome, command: readonly string[]): Promise<void> {
  const path = notifyConfigPath(home);
  if (command.length === 0) {
    await unlink(path).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "ENOENT") throw error;
    });
    return;
  }
  await writeFileAtomic(path, new TextEncoder().encode(JSON.stringify({ command }, null, 2) + "\n"), { mode: 0o600 });
}
