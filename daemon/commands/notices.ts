import { setTimeout as sleep } from "node:timers/promises";
import { RecordType } from "../../src/gen/teamd/v1/ledger_pb.js";
import { openStore, type StoreReader } from "../../src/ledger/store.js";
import { describeStored, type LedgerEntry } from "../../src/ledger/entry.js";
import { writeFileAtomic } from "../../src/ledger/atomic-file.js";
import { resolveHome, type TeamdHome } from "../host/home.js";
import { countUnseen, isTold, lastSeenNotice, noticesSeenPath } from "../host/notice-mark.js";
import { ledgerExists, ledgerLayout } from "../host/ledger-layout.js";
import { loadNotifyHook, notifyConfigPath, saveNotifyHook } from "../host/notify-config.js";
import { terminalJson, terminalText } from "../host/terminal-text.js";

const PAGE = 500;

/**
 * How many notice records are newer than the last one the owner saw, read from the store here.
 * `teamd status` asks the daemon (StatusResponse.notices_unseen); this is for a daemon too old
 * to answer it.
 */
export function unseenNotices(home: TeamdHome): number | undefined {
  const layout = ledgerLayout(home);
  if (!ledgerExists(layout)) return undefined;
  let store: StoreReader | undefined;
  try {
    const open = openStore(layout.db, { readonly: true });
    store = open;
    return countUnseen(home, (from, limit) => open.recordsOfType(RecordType.NOTICE, from, limit).map(describeStored), PAGE);
  } catch {
    return undefined;
  } finally {
    store?.close();
  }
}

function noticeOf(entry: LedgerEntry): { subject: string; text: string; about: number | undefined } {
  const notice = entry.payload?.detail.case === "notice" ? entry.payload.detail.value : { subject: "", text: "" };
  const about = Number(entry.payload?.fields.find((f) => f.key === "about")?.value);
  return { subject: notice.subject, text: notice.text, about: Number.isSafeInteger(about) ? about : undefined };
}

/**
 * `teamd notices [--all] [--follow] [--json]`: the notices not yet seen, oldest first, then
 * marks them seen; --all shows every one and leaves the mark alone. Read-only on the ledger
 * (the daemon may run).
 */
export async function noticesCommand(options: { all?: boolean; follow?: boolean; json?: boolean }): Promise<void> {
  const home = resolveHome();
  const layout = ledgerLayout(home);
  if (!ledgerExists(layout)) throw new Error(`no ledger at ${layout.db}: run teamd init`);
  const store = openStore(layout.db, { readonly: true });
  let stopping = false;
  const stop = () => void (stopping = true);
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  let next = options.all ? 0 : lastSeenNotice(home) + 1;
  let printed = 0;
  const markSeen = async (seq: number) => {
    // Best effort: a read-only TEAMD_HOME (another user's system daemon) still shows notices.
    await writeFileAtomic(noticesSeenPath(home), new TextEncoder().encode(`${seq}\n`), { mode: 0o600 }).catch(() => undefined);
  };
  try {
    const print = async () => {
      for (;;) {
        const rows = store.recordsOfType(RecordType.NOTICE, next, PAGE);
        if (rows.length === 0) return;
        for (const row of rows) {
          next = row.seq + 1;
          const entry = describeStored(row);
          if (!isTold(entry)) continue;
          const n = noticeOf(entry);
          printed++;
          if (options.json)
            process.stdout.write(
              terminalJson(
                JSON.stringify({
                  seq: entry.seq,
                  time: new Date(entry.timeUnixMs).toISOString(),
                  team: entry.team,
                  about: n.about,
                  subject: n.subject,
                  text: n.text,
                }),
              ) + "\n",
            );
          else
            process.stdout.write(
              `${String(entry.seq).padStart(6)}  ${new Date(entry.timeUnixMs)
                .toISOString()
                .replace("T", " ")
                .replace(/\.\d+Z$/, "Z")}  ${terminalText(n.subject)}: ${terminalText(n.text)}\n`,
            );
        }
        if (!options.all && next - 1 > lastSeenNotice(home)) await markSeen(next - 1);
      }
    };
    await print();
    if (printed === 0 && !options.json && !options.follow) process.stdout.write(options.all ? "no notices\n" : "no new notices\n");
    while (options.follow && !stopping) {
      await sleep(300);
      await print();
    }
  } finally {
    store.close();
    process.removeListener("SIGINT", stop);
    process.removeListener("SIGTERM", stop);
  }
}

/** `teamd notices hook [--clear] [-- CMD ARGS...]`: show, set or clear the owner's notice hook. */
export async function noticeHookCommand(command: readonly string[], options: { clear?: boolean; json?: boolean }): Promise<void> {
  const home = resolveHome();
  if (options.clear || command.length > 0) {
    await saveNotifyHook(home, options.clear ? [] : command);
    const what = options.clear ? "cleared" : `set to ${JSON.stringify(command)}`;
    if (options.json) process.stdout.write(JSON.stringify({ hook: options.clear ? null : command, path: notifyConfigPath(home) }) + "\n");
    else
      process.stdout.write(
        `notice hook ${what} (${notifyConfigPath(home)}); a running daemon picks it up on SIGHUP (kill -HUP <its pid>, shown by teamd status) or its next start\n`,
      );
    return;
  }
  const loaded = loadNotifyHook(home);
  if (!loaded.ok) throw new Error(`the notice hook is refused: ${loaded.reason}`);
  if (options.json) process.stdout.write(JSON.stringify({ hook: loaded.hook?.command ?? null, path: notifyConfigPath(home) }) + "\n");
  else
    process.stdout.write(
      loaded.hook ? `notice hook: ${JSON.stringify(loaded.hook.command)}\n` : "no notice hook (set one with: teamd notices hook -- notify-send teamd)\n",
    );
}
