import { canonicalEndpointPattern } from "../../src/kernel/egress-context.js";
import { labHostsFor } from "../../src/kernel/lab-presets.js";
import type { LedgerEntry } from "../../src/ledger/index.js";
import type { Ambient } from "../host/ambient.js";
import { checkName } from "../host/names.js";
import { fitRow, terminalJson, terminalText } from "../host/terminal-text.js";
import { entriesFrom, openLedgerReader, recordTime, sinceTime } from "./ledger-read.js";
import { isSeatRecord } from "../../src/ledger/entry.js";
import { seatTarget } from "./seat.js";

/**
 * `teamd egress refused [SEAT]`: the hosts the team's seats were refused, one line per seat and
 * host with a count — an agent's telemetry and update checks refuse dozens of times a minute,
 * which read record by record hide what matters — and the `start.network.allow` lines that
 * would allow them. It changes nothing: the owner decides, edits the team file and applies it
 * (§12: egress is what the team file declares, nothing else). Every host here is what a seat
 * asked for, so only a host that is a valid allow pattern gets an allow line, and every text is
 * printed through terminalText.
 */
export interface EgressRefusedOptions {
  readonly team?: string;
  readonly since?: string;
  readonly json?: boolean;
}

interface Refused {
  readonly team: string;
  readonly seat: string;
  /** host:port as the seat asked for it (as recorded). */
  readonly endpoint: string;
  readonly rule: string;
  count: number;
  firstUnixMs: number;
  lastUnixMs: number;
  reason: string;
}

const ACTION = "egress.connect";

export async function egressRefusedCommand(seatSpec: string | undefined, options: EgressRefusedOptions, ambient: Ambient): Promise<void> {
  const named = seatSpec === undefined ? undefined : seatTarget(seatSpec, options.team);
  const team = named?.team || (options.team === undefined ? undefined : checkName("team", options.team));
  const seat = named?.seat;
  const since = options.since === undefined ? undefined : sinceTime(options.since, ambient.now());
  const groups = new Map<string, Refused>();
  const store = openLedgerReader();
  try {
    for (const entry of entriesFrom(store, 0)) {
      if (entry.type !== "refusal" || entry.action !== ACTION) continue;
      if (team !== undefined && entry.team !== team) continue;
      if (seat !== undefined && !isSeatRecord(entry, seat, team)) continue;
      if (since !== undefined && entry.timeUnixMs < since) continue;
      const refused = describe(entry);
      if (refused === undefined) continue;
      const key = JSON.stringify([refused.team, refused.seat, refused.endpoint, refused.rule]);
      const group = groups.get(key);
      if (group === undefined) groups.set(key, refused);
      else {
        group.count += 1;
        group.lastUnixMs = entry.timeUnixMs;
        group.reason = refused.reason;
      }
    }
  } finally {
    store.close();
  }
  const rows = [...groups.values()].sort((a, b) => b.count - a.count || a.endpoint.localeCompare(b.endpoint));
  if (options.json) {
    for (const row of rows) {
      const allow = allowPattern(row);
      const preset = presetNote(row);
      process.stdout.write(terminalJson(JSON.stringify({ ...row, ...(allow !== undefined ? { allow } : {}), ...(preset ? { lab: preset } : {}) })) + "\n");
    }
    return;
  }
  const scope = seat !== undefined ? `seat ${seat}${team ? `@${team}` : ""}` : team !== undefined ? `team ${team}` : "this machine's seats";
  if (rows.length === 0) {
    process.stdout.write(`no egress was refused for ${scope}${options.since ? ` since ${options.since}` : ""}\n`);
    return;
  }
  const total = rows.reduce((sum, r) => sum + r.count, 0);
  // On a terminal each row is one visual row (a reason holds what the seat asked for).
  const columns = process.stdout.isTTY ? process.stdout.columns : undefined;
  process.stdout.write(
    `egress refused for ${scope}${options.since ? ` since ${options.since}` : ""}: ${total} refusals, ${rows.length} seat-and-host pairs\n\n`,
  );
  const widths = [Math.max(4, ...rows.map((r) => `${r.seat}@${r.team}`.length)), Math.max(9, ...rows.map((r) => r.endpoint.length))];
  process.stdout.write(`  ${"SEAT".padEnd(widths[0] as number)}  COUNT  ${"HOST:PORT".padEnd(widths[1] as number)}  RULE           LAST\n`);
  for (const r of rows) {
    const preset = presetNote(r);
    const cells = [
      `${r.seat}@${r.team}`.padEnd(widths[0] as number),
      String(r.count).padStart(5),
      r.endpoint.padEnd(widths[1] as number),
      r.rule.padEnd(13),
      recordTime(r.lastUnixMs),
      preset ? `(${preset})` : "",
    ];
    process.stdout.write(`${fitRow(`  ${terminalText(cells.join("  ").trimEnd())}`, columns)}\n`);
  }
  const bySeat = new Map<string, string[]>();
  for (const r of rows) {
    const allow = allowPattern(r);
    if (allow === undefined) continue;
    const key = `${r.seat}@${r.team}`;
    bySeat.set(key, [...(bySeat.get(key) ?? []), allow]);
  }
  const others = rows.filter((r) => allowPattern(r) === undefined);
  if (bySeat.size > 0) {
    process.stdout.write(
      "\nTo let a seat reach these hosts, add them to its start.network.allow in teamd.yaml (keep what is there), then run teamd apply.\n" +
        "Nothing is allowed until you do; each line is a host the agent could then send anything to.\n",
    );
    for (const [key, allow] of bySeat) {
      const [name] = key.split("@");
      process.stdout.write(
        `\n  # ${terminalText(key)}\n  ${terminalText(name as string)}:\n    start:\n      network:\n        allow: [${allow.map((a) => JSON.stringify(a)).join(", ")}]\n`,
      );
    }
  }
  if (others.length > 0) {
    process.stdout.write("\nNot a missing allow line (the reason says what to change, if anything):\n");
    for (const r of others) process.stdout.write(`${fitRow(`  ${terminalText(`${r.seat}@${r.team} ${r.endpoint}: ${r.reason}`)}`, columns)}\n`);
  }
}

/** A refusal's seat and host, from its actor and its target (`seat:SEAT/egress/HOST:PORT`). */
function describe(entry: LedgerEntry): Refused | undefined {
  const actor = /^seat:([^/]+)\/(.+)$/.exec(entry.actor);
  if (actor === null) return undefined;
  const marker = "/egress/";
  const at = entry.target.indexOf(marker);
  const endpoint = at < 0 ? "(no host: a stream the daemon could not read)" : (entry.target.slice(at + marker.length).split("/")[0] as string);
  const detail = entry.payload?.detail;
  const reason = detail?.case === "refusal" ? detail.value.reason : "";
  return {
    team: actor[1] as string,
    seat: actor[2] as string,
    endpoint,
    rule: entry.result,
    count: 1,
    firstUnixMs: entry.timeUnixMs,
    lastUnixMs: entry.timeUnixMs,
    reason,
  };
}

/** The allow line for a refusal that one would cure: a host not on the list, named validly. */
function allowPattern(r: Refused): string | undefined {
  if (r.rule !== "egress.host") return undefined;
  const parsed = canonicalEndpointPattern(r.endpoint);
  return parsed.ok ? parsed.pattern : undefined;
}

/** What teamd's lab presets say of the host (an agent CLI's telemetry or update host, left out on purpose), if anything. */
function presetNote(r: Refused): string | undefined {
  const known = labHostsFor(r.endpoint);
  if (known.length === 0) return undefined;
  return known.map((k) => `${k.cli}: ${k.use}${k.optional ? ", left out by default" : ""}`).join("; ");
}
