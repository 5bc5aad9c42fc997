import { resolve } from "node:path";
import { OwnerActKind } from "../../src/gen/teamd/v1/control_pb.js";
import { RecordType, TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import { canonicalBound, readBound, type CreateBound, type LabSlice } from "../../src/kernel/create-bound.js";
import { parseDuration, showDuration } from "../../src/kernel/duration.js";
import { showAmount } from "../../src/kernel/envelope-spend.js";
import { parseAmount } from "../../src/kernel/spend-input.js";
import { describeStored, signOwnerAct } from "../../src/ledger/index.js";
import { unfitRoot } from "../../src/effects/team-root.js";
import { UsageError } from "../../src/rpc/errors.js";
import { resolveHome } from "../host/home.js";
import { checkName } from "../host/names.js";
import { openOwnerChannel } from "../owner/channel.js";
import { openLedgerReader } from "./ledger-read.js";
import { ownerKeyForAct } from "./owner-session.js";
import { askYesNo } from "./prompt.js";
import type { Ambient } from "../host/ambient.js";

/**
 * `teamd create-bounds set|show|clear SEAT@TEAM` (§10: create is written on the machine, bounded
 * by what the giver wrote): an owner-signed record, never a team file a seat could carry. The
 * seat must also hold `create: ~` in its own capabilities; a bound without it creates nothing,
 * and create without a bound creates nothing.
 */
export interface CreateBoundsSetOptions {
  readonly teams?: string;
  readonly root?: readonly string[];
  readonly start?: readonly string[];
  readonly alsoStart?: boolean;
  readonly grant?: boolean;
  readonly spend?: string;
  readonly lab?: readonly string[];
  readonly runtime?: string;
  readonly yes?: boolean;
  readonly json?: boolean;
}

function seatAt(ref: string): { seat: string; team: string } {
  const at = ref.indexOf("@");
  if (at <= 0 || at === ref.length - 1) throw new UsageError(`'${ref}' is not SEAT@TEAM: a create-bound names the seat and its team`);
  return { seat: checkName("seat", ref.slice(0, at)), team: checkName("team", ref.slice(at + 1)) };
}

/** A start command as the owner writes it: a JSON array (`["claude","-p"]`), or words split on spaces. */
function startArgv(text: string): string[] {
  const trimmed = text.trim();
  if (trimmed.startsWith("[")) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch {
      throw new UsageError(`--start ${text}: not a JSON array of strings`);
    }
    if (!Array.isArray(parsed) || parsed.length === 0 || !parsed.every((w) => typeof w === "string"))
      throw new UsageError(`--start ${text}: a JSON array of at least one string`);
    return parsed as string[];
  }
  const words = trimmed.split(/\s+/).filter((w) => w !== "");
  if (words.length === 0) throw new UsageError("--start needs a command");
  return words;
}

/** `--lab anthropic:spend=20,seats=2`: one lab's part of the child's slice. */
function labSlice(text: string): [string, LabSlice] {
  const m = /^([^:=,\s]+):(.+)$/.exec(text.trim());
  if (m === null) throw new UsageError(`--lab ${text}: write LAB:spend=AMOUNT,seats=N (either or both)`);
  const slice: { spend?: number; seats?: number } = {};
  for (const part of (m[2] as string).split(",")) {
    const [key, value] = part.split("=", 2).map((x) => x.trim());
    if (key === "spend") {
      const amount = parseAmount(value);
      if (amount === undefined) throw new UsageError(`--lab ${text}: '${value}' is not an amount (at most two decimals)`);
      slice.spend = amount;
    } else if (key === "seats") {
      if (value === undefined || !/^[0-9]{1,4}$/.test(value)) throw new UsageError(`--lab ${text}: seats is a whole number`);
      slice.seats = Number(value);
    } else throw new UsageError(`--lab ${text}: '${key}' is neither spend nor seats`);
  }
  return [m[1] as string, slice];
}

/** The bound the flags describe, checked as the daemon will read it. */
export function boundFromFlags(ref: string, options: CreateBoundsSetOptions): CreateBound {
  const { seat, team } = seatAt(ref);
  const teams = options.teams === undefined ? 1 : Number(options.teams);
  const roots = (options.root ?? []).map((r) => resolve(r));
  if (roots.length === 0) throw new UsageError("name at least one --root DIR: the repository a child team lives at (one child per root)");
  const spend = options.spend === undefined ? undefined : parseAmount(options.spend);
  if (options.spend !== undefined && spend === undefined) throw new UsageError(`--spend ${options.spend}: not an amount (at most two decimals)`);
  const runtimeMs = options.runtime === undefined ? undefined : parseDuration(options.runtime);
  if (options.runtime !== undefined && runtimeMs === undefined) throw new UsageError(`--runtime ${options.runtime}: not a duration (e.g. 2h, 30m)`);
  const draft = {
    seat,
    team,
    teams,
    roots,
    starts: (options.start ?? []).map(startArgv),
    alsoStarts: options.alsoStart === true,
    grant: options.grant === true,
    ...(spend !== undefined ? { spend } : {}),
    labs: Object.fromEntries((options.lab ?? []).map(labSlice)),
    ...(runtimeMs !== undefined ? { runtimeMs } : {}),
  };
  const read = readBound(JSON.stringify(draft));
  if (typeof read === "string") throw new UsageError(`the bound is not one teamd can hold: ${read}`);
  return read;
}

/** The bound in words, one line each (what the owner is asked to sign, and `show` prints). */
export function boundWords(bound: CreateBound, currency = ""): string[] {
  const amount = (n: number) => (currency === "" ? (n / 100).toFixed(2) : showAmount(n, currency));
  const labs = Object.entries(bound.labs).map(
    ([lab, s]) =>
      `${lab}: ${[s.spend !== undefined ? `spend ${amount(s.spend)}` : "", s.seats !== undefined ? `${s.seats} seat(s)` : ""].filter(Boolean).join(", ")}`,
  );
  return [
    `${bound.seat}@${bound.team} may create ${bound.teams} team(s)`,
    `at: ${bound.roots.join(", ")}`,
    `start commands a child's seats may pin: ${bound.starts.map((s) => JSON.stringify(s)).join(", ") || "none (its seats have no start)"}`,
    `creating ${bound.alsoStarts ? "also starts" : "does not start"} the child; its seats ${bound.grant ? "may" : "may not"} be given grant or agree`,
    `slice: ${bound.spend !== undefined ? `spend ${amount(bound.spend)} in all` : "no spend"}${labs.length > 0 ? `; ${labs.join("; ")}` : ""}`,
    `runtime: ${bound.runtimeMs !== undefined ? `a window of ${showDuration(bound.runtimeMs)} from its creation` : "the creator's remaining runtime (a create mints none)"}`,
  ];
}

async function submitBound(team: string, seat: string, canonical: string, ambient: Ambient): Promise<number> {
  const key = await ownerKeyForAct();
  const channel = await openOwnerChannel(resolveHome(), ambient.now);
  try {
    const act = await signOwnerAct(
      {
        type: RecordType.CREATE_BOUND,
        team,
        action: canonical === "" ? "create-bound.clear" : "create-bound.set",
        payload: {
          domain: { team, repositoryRoot: "" },
          target: { kind: TargetKind.SEAT, name: seat },
          requestId: ambient.newId(),
          detail: { case: "createBound", value: { seat, canonical } },
        },
      },
      key.seed,
    );
    return (await channel.submit(OwnerActKind.CREATE_BOUND, act)).seq;
  } finally {
    await channel.close();
  }
}

export async function createBoundsSet(ref: string, options: CreateBoundsSetOptions, ambient: Ambient): Promise<void> {
  const bound = boundFromFlags(ref, options);
  const home = resolveHome();
  for (const root of bound.roots) {
    const unfit = await unfitRoot(root, home.root);
    if (unfit !== undefined) throw new UsageError(`--root ${root}: ${unfit}`);
  }
  if (!options.json)
    process.stderr.write(
      boundWords(bound)
        .map((l) => `  ${l}\n`)
        .join(""),
    );
  if (!options.yes && !(await askYesNo(`Write this create-bound for ${bound.seat}@${bound.team}?`))) throw new Error("cancelled; nothing was written");
  const seq = await submitBound(bound.team, bound.seat, canonicalBound(bound), ambient);
  if (options.json)
    process.stdout.write(`${JSON.stringify({ set: true, seat: bound.seat, team: bound.team, seq, bound: JSON.parse(canonicalBound(bound)) })}\n`);
  else process.stdout.write(`create-bound for ${bound.seat}@${bound.team} written: record ${seq}\n`);
}

export async function createBoundsClear(ref: string, options: { json?: boolean }, ambient: Ambient): Promise<void> {
  const { seat, team } = seatAt(ref);
  const seq = await submitBound(team, seat, "", ambient);
  if (options.json) process.stdout.write(`${JSON.stringify({ cleared: true, seat, team, seq })}\n`);
  else process.stdout.write(`create-bound for ${seat}@${team} cleared: record ${seq}; the teams it created stay\n`);
}

/** The bounds in force, read from the records (read-only, beside the daemon), each with the teams made under it. */
export function createBoundsShow(ref: string | undefined, options: { json?: boolean }): void {
  const only = ref === undefined ? undefined : seatAt(ref);
  const store = openLedgerReader();
  const bounds = new Map<string, { seq: number; bound: CreateBound }>();
  const made = new Map<number, string[]>();
  try {
    for (const type of [RecordType.CREATE_BOUND, RecordType.TEAM]) {
      for (let at = 0; ;) {
        const rows = store.recordsOfType(type, at, 500);
        if (rows.length === 0) break;
        for (const row of rows) {
          at = Number(row.seq) + 1;
          const e = describeStored(row);
          const d = e.payload?.detail;
          if (d?.case === "createBound") {
            const key = `${d.value.seat}@${e.team}`;
            const read = d.value.canonical === "" ? undefined : readBound(d.value.canonical);
            if (read === undefined || typeof read === "string") bounds.delete(key);
            else bounds.set(key, { seq: e.seq, bound: read });
          } else if (d?.case === "team" && d.value.parent !== "") {
            const seq = Number(d.value.boundSeq);
            made.set(seq, [...(made.get(seq) ?? []), e.team]);
          }
        }
      }
    }
  } finally {
    store.close();
  }
  const shown = [...bounds.entries()].filter(([key]) => only === undefined || key === `${only.seat}@${only.team}`);
  if (options.json) {
    process.stdout.write(
      `${JSON.stringify({ bounds: shown.map(([, { seq, bound }]) => ({ seq, bound: JSON.parse(canonicalBound(bound)), created: made.get(seq) ?? [] })) })}\n`,
    );
    return;
  }
  if (shown.length === 0) {
    process.stdout.write(`no create-bound is written${only !== undefined ? ` for ${only.seat}@${only.team}` : ""}: no seat may create a team\n`);
    return;
  }
  for (const [, { seq, bound }] of shown) {
    const created = made.get(seq) ?? [];
    process.stdout.write(
      `record ${seq}:\n${boundWords(bound)
        .map((l) => `  ${l}\n`)
        .join("")}  created so far: ${created.length}${created.length > 0 ? ` (${created.join(", ")})` : ""}\n`,
    );
  }
}
