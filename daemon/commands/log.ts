import { UsageError } from "../../src/rpc/refusal.js";
import { setTimeout as sleep } from "node:timers/promises";
import { describeStored, openStore, recordTypeFromName, type LedgerEntry, type StoreReader } from "../../src/ledger/index.js";
import { RecordType } from "../../src/gen/teamd/v1/ledger_pb.js";
import { resolveHome } from "../host/home.js";
import { ledgerExists, ledgerLayout } from "../host/ledger-host.js";
import { terminalJson, terminalText } from "../host/terminal-text.js";

const PAGE = 500;

function typeNames(): string {
  return Object.keys(RecordType)
    .filter((k) => Number.isNaN(Number(k)) && k !== "UNSPECIFIED")
    .map((k) => k.toLowerCase())
    .join(", ");
}

/**
 * Assent has provenance (§11): an owner act is on record only with the signature of the owner
 * key pinned at genesis, checked when it was appended and again by every verify — the tool
 * witnessed the key holder's assent. teamd records no told assent: an act reported by anyone
 * else (a seat's call on the control channel, another key, a replay) is refused and recorded
 * as a refusal, never as the owner's.
 */
function assent(e: LedgerEntry): "witnessed" | undefined {
  return e.signer === "owner" ? "witnessed" : undefined;
}

function line(e: LedgerEntry): string {
  const time = new Date(e.timeUnixMs)
    .toISOString()
    .replace("T", " ")
    .replace(/\.\d+Z$/, "Z");
  const actor = assent(e) === "witnessed" ? `${e.actor} (witnessed)` : e.actor;
  const who = e.claimedName && e.actor !== e.claimedName ? `${actor} (claims ${e.claimedName})` : actor;
  const cols = [
    String(e.seq).padStart(6),
    time,
    e.type.padEnd(10),
    (e.team || "-").padEnd(12),
    who.padEnd(14),
    e.action.padEnd(16),
    e.target || "-",
    e.result,
    e.late ? "(late)" : "",
    e.error ? `!! ${e.error}` : "",
  ];
  // A target, an action or an error can carry what a seat sent (a refused ref name): made visible, never played to the terminal.
  return cols
    .filter((c) => c !== "")
    .map(terminalText)
    .join("  ");
}

function json(e: LedgerEntry): string {
  const { header: _h, payload, ...rest } = e;
  const witnessed = assent(e);
  // The payload's named fields as recorded (an exec's argv with credentials redacted, an egress
  // connection's address and bytes, a stop's run state): what the record says, nothing added.
  const fields = payload?.fields.length ? { fields: Object.fromEntries(payload.fields.map((f) => [f.key, f.value])) } : {};
  return terminalJson(JSON.stringify({ ...rest, ...fields, ...(witnessed === undefined ? {} : { assent: witnessed }) }));
}

/**
 * `teamd log`: the records, oldest first, read-only (the daemon may be running: SQLite's
 * WAL lets a reader in beside the writer). --follow keeps printing what is appended.
 */
export async function log(options: { json?: boolean; type?: string; follow?: boolean }): Promise<void> {
  let type: RecordType | undefined;
  if (options.type !== undefined) {
    type = recordTypeFromName(options.type.toLowerCase());
    if (type === undefined) throw new UsageError(`unknown record type '${options.type}': choose from ${typeNames()}`);
  }
  const layout = ledgerLayout(resolveHome());
  if (!ledgerExists(layout)) throw new Error(`no ledger at ${layout.db}: run teamd init`);
  const store: StoreReader = openStore(layout.db, { readonly: true });
  let stopping = false;
  const stop = () => void (stopping = true);
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  try {
    let next = 0;
    const print = () => {
      for (;;) {
        const rows = store.records(next, PAGE);
        if (rows.length === 0) return;
        for (const row of rows) {
          next = Number(row.seq) + 1;
          const entry = describeStored(row);
          if (type !== undefined && entry.header?.type !== type) continue;
          process.stdout.write((options.json ? json(entry) : line(entry)) + "\n");
        }
      }
    };
    print();
    while (options.follow && !stopping) {
      await sleep(300);
      print();
    }
  } finally {
    store.close();
    process.removeListener("SIGINT", stop);
    process.removeListener("SIGTERM", stop);
  }
}
