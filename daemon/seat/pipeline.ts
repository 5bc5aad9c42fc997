import { RecordType } from "../../src/gen/teamd/v1/ledger_pb.js";
import { authorize, refuse, type Allow, type KernelView, type KernelFacts, type KernelRequest, type Refusal, type Seat } from "../../src/kernel/index.js";
import { readIsUnbounded, readScope } from "../../src/kernel/read-scope.js";
import {
  LedgerRefusal,
  principalKey,
  seatPrincipal,
  sha256,
  toHex,
  type Effect,
  type IntentType,
  type LedgerEntry,
  type RecordDraft,
  type Ledger,
  type RequestState,
  type SubmitReply,
  type SubmitRequest,
  type TargetInit,
  type TeamState,
} from "../../src/ledger/index.js";
import { RefusalError } from "../../src/rpc/errors.js";
import { decisionView, leaseFactsFor } from "../../src/ledger/decision-view.js";
import { capabilityUse, leaseSetHash } from "../../src/ledger/input-state.js";
import { runtimeRefusal } from "../../src/kernel/envelope-runtime.js";
import { policyInForce, type PolicyInForce } from "../../src/ledger/policy-in-force.js";
import { boundEchoes, boundText, INTENT_TEXT_BYTES, RECORD_NAME_BYTES, RECORD_TEXT_BYTES, utf8Bytes } from "../../src/ledger/bounded-text.js";
import { approxActBytes, approxOutcomeDetail, approxRecordBytes } from "../../src/ledger/record-size.js";
import { createDecisionLock } from "./decision-lock.js";
import { createTokenBuckets, type Rate } from "./token-buckets.js";

/** Who is calling: the socket a call arrived on, closed over at bind — never a field of the request (§11). */
export interface SeatIdentity {
  readonly team: string;
  readonly seat: string;
}

/**
 * The request pipeline for seat calls (DESIGN.md "One request, end to end"):
 *
 * 1. accept once — the RPC edge froze the message; the seat is the socket it came on;
 * 2. guards that need no store and can only deny — the owner's stop, revocation flags, the
 *    head (`ledger.guard`), read before any record;
 * 3. decide — `authorize` over the policy in force, under one serialization per machine;
 * 4. intent (durable) → 5. effect → 6. outcome — `ledger.submit`, with per-seat request ids;
 * 7. tell — what the seat is told is the refusal's rule and a reason it can act on.
 *
 * Every refusal a seat meets is recorded, once, where the store is up — this file holds the
 * one builder of a seat's REFUSAL records, and the only `RefusalError`s of daemon/seat/ (a
 * lint wall) — and remembered as the seat's last one (whoami shows it). A refusal whose
 * attempt is already on record (an outcome `refused` or `unknown`, or a refusal the ledger
 * recorded itself) is not recorded twice. The serialization covers the decision and the intent's place in the
 * chain only: the fsync that makes the intent durable is shared with every concurrent one
 * (group commit), and the effect (a push, a merge) runs after, so one slow effect or disk
 * never stalls the machine's decisions.
 */
export interface SeatContext {
  readonly identity: SeatIdentity;
  readonly ledger: Ledger;
  readonly team: TeamState;
  readonly policy: PolicyInForce;
  readonly seat: Seat;
}

export interface GatedAct {
  /** The ledger's action name, e.g. `git.push`. */
  readonly action: string;
  /** The intent's record type: GATE or REVIEW for those decisions (§15), INTENT by default. */
  readonly type?: IntentType;
  /** The git tree of the hub's state the act is decided against (src/ledger/input-state.ts); none: on no ref. */
  readonly treeHash?: string;
  readonly target: TargetInit;
  readonly requestId: string;
  /** The canonical request bytes: a retry must present exactly these (§15). */
  readonly request: Uint8Array;
  /** The intent's payload; a function when it names what the decision chose (the pass a merge consumes). */
  readonly payload?: SubmitRequest["payload"] | ((decision: Allow | undefined) => SubmitRequest["payload"]);
  /** The ledger's facts the decision reads (trunk acts: authors, gates, reviews, runs...). */
  readonly facts?: KernelFacts;
  /**
   * The request's paths came from the hub, not from the seat (a trunk act's change): a refusal
   * withholds those the seat may not read (§3). A path the seat sent itself is echoed (bounded).
   */
  readonly pathsFromHub?: boolean;
}

/** One read served to a seat: what its SERVED record says (never content). */
export interface ServedRead {
  readonly action: "file.read" | "file.stat" | "git.list" | "git.fetch";
  /** What was served, as coalescing compares it: a path, or a digest of the tips. */
  readonly subject: string;
  readonly target: TargetInit;
  /** The record's fields: a path and size, the tips (bounded). */
  readonly fields: readonly { readonly key: string; readonly value: string }[];
}

/** Repeats of one serve within this window are one further record with a count. */
export const SERVED_WINDOW_MS = 10_000;

/**
 * A seat's served-read rate (distinct serves, each a record): 600 at once, then 120 a minute
 * (two a second, sustained). Its reads of the trunk are `teamd-shim file read|stat` and `git
 * fetch teamd`; its own checkout is read in the seat, unrecorded — so this sits far above what
 * an agent does through teamd, and far below what would flood the ledger.
 */
export const DEFAULT_SERVED_RATE: Rate = Object.freeze({ burst: 600, perMinute: 120 });

/** A records-only request's id and the digest of its bytes (§15: one retry rule). */
export interface RecordedRequestBytes {
  readonly id: string;
  readonly digest: Uint8Array;
}

export interface SeatPipeline {
  /**
   * Steps 1–2 and the policy in force; a refusal is recorded and thrown (`quiet`: recorded,
   * but not remembered as the seat's last refusal). `guardInAct`: the call's only work is one
   * act, whose submit runs the same guards under the lock before the intent — so they are
   * not read twice.
   */
  context(identity: SeatIdentity, action: string, options?: ContextOptions): Promise<SeatContext>;
  /** Step 3 without an intent (a read, or a check before an effect is prepared): allow, or a recorded refusal thrown. */
  decide(ctx: SeatContext, request: Omit<KernelRequest, "seat">, action: string, facts?: KernelFacts): Promise<Allow>;
  /**
   * What a decision would see now — the policy, the team's leases, the time — for a kernel
   * question asked inside an effect whose act was decided and recorded (a replay's writes over
   * what the seat cannot read): nothing is recorded for it.
   */
  decisionInputs(ctx: SeatContext): { readonly view: KernelView; readonly now: number };
  /**
   * Steps 3–6 for one gated act: decide and append the intent under the machine's one lock,
   * then run the effect. `request` undefined: an act no capability governs (moving a ref in
   * the seat's own namespace to a commit the hub already has) — recorded all the same.
   */
  act(ctx: SeatContext, request: Omit<KernelRequest, "seat"> | undefined, act: GatedAct, effect: Effect): Promise<SubmitReply>;
  /**
   * A decision whose effect is records (a lease issued, leases revoked, §7): under the
   * machine's one lock, the guards, then `decide` over the view with the team's leases, then
   * its records in one transaction — or its refusal, recorded.
   */
  record(
    ctx: SeatContext,
    action: string,
    target: TargetInit,
    request: RecordedRequestBytes,
    decide: (view: KernelView, now: number) => Refusal | readonly RecordDraft[],
  ): Promise<{ readonly seq: number; readonly replayed: boolean }>;
  /** The view a decision for this seat reads now (the policy in force, the team's leases). */
  view(ctx: SeatContext): KernelView;
  readonly clock: () => number;
  /** Record a refusal the daemon reached outside the kernel (a corrupt pack, a ref outside the namespace) and return it to throw. */
  /**
   * `weight`: what it takes of the seat's refusal budget (default 1): a refused push of a pack
   * file the daemon copied takes one more for every 8 MiB of it (git.ts), since that file may
   * have cost the seat nothing (holes, or the same file pushed again).
   */
  refuse(ctx: Pick<SeatContext, "identity" | "ledger">, refusal: Refusal, action: string, target?: TargetInit, weight?: number): Promise<RefusalError>;
  /**
   * Record a refusal met at the edge before any context (a wrong protocol version, an owner
   * act on a seat's socket) against the ledger open now, and return it to throw.
   */
  refuseCall(identity: SeatIdentity, refusal: Refusal, action: string, target?: TargetInit): Promise<RefusalError>;
  /**
   * The refusal an act's own outcome already records (`refused`, `unknown`): remembered as the
   * seat's last, never recorded a second time.
   */
  outcomeRefusal(ctx: Pick<SeatContext, "identity">, refusal: Refusal): RefusalError;
  /**
   * The shared replay check (§15): a request id this seat used before, for this action, is a
   * retry answered from the record — never dispatched again. Undefined for a new request id;
   * one used for another act is refused (`request.replay-mismatch`, recorded).
   */
  replay(ctx: SeatContext, requestId: string, action: string): Promise<Replay | undefined>;
  /**
   * What a read served the seat (§3: what a lab learns is what its seats were served), on
   * record: the first serve of a thing in a window is one SERVED record, appended before the
   * content leaves (a store that cannot take it refuses the read); repeats of it within
   * SERVED_WINDOW_MS — each sent only once that first record is in — are counted into one more
   * record when the window closes. Distinct serves are bounded by the seat's served-read rate
   * (`seat.served-rate`) and every record counts in its act budget (ledger bytes). Returns the
   * seq of the window's first record. `subject` is what makes two serves the same: it must
   * name what was shown (a path and its blob, a stat's answer, the tips), never only where.
   */
  served(ctx: SeatContext, read: ServedRead): Promise<number>;
  /**
   * What a serve's end adds, once known (a fetch's pack bytes, also of a stream cut short): one
   * more SERVED record pointing at the serve's first (`of`), charged, never refused — the
   * content is out; a store that will not take it is said in the daemon's log.
   */
  servedEnd(ctx: SeatContext, read: Pick<ServedRead, "action" | "target">, first: number, fields: ServedRead["fields"]): Promise<void>;
  /** The seat's last refusal in this daemon run. */
  lastRefusal(identity: SeatIdentity): Refusal | undefined;
  /** A new run of the seat (its socket opened): its refusal budget starts full. */
  openRun(identity: SeatIdentity): void;
}

/**
 * A seat's refusal budget (issue 20): a token bucket of `burst` refusals that refills at
 * `perMinute`. The refusal that finds it empty is recorded, then the seat is stopped and the
 * owner told (`onRefusalBudget`). A working agent is refused now and then — agent CLIs'
 * telemetry alone makes dozens of egress refusals in minutes — so the budget sits far above
 * that: 300 at once, then 60 a minute sustained (one a second, every second, for as long as
 * the seat runs). A seat past it is flooding the ledger (docs/enforcement.md, "Records are bounded").
 */
export type RefusalBudget = Rate;

export const DEFAULT_REFUSAL_BUDGET: RefusalBudget = Object.freeze({ burst: 300, perMinute: 60 });

/**
 * A seat's act budget (issue 20, "Records are bounded"), in bytes of records: every act a seat
 * makes is an intent and an outcome in the owner's ledger, and without a bound a seat making
 * checkpoints with long notes stored 160–200 MiB a minute. The budget is a token bucket of
 * record bytes — 16 MiB at once, then 2 MiB a minute — charged with each act's estimated
 * records (src/ledger/record-size.ts): the intent's before it is appended, the outcome's note
 * and reply once known. An act that finds the bucket empty is refused `seat.act-budget`,
 * recorded, with the wait it needs; the seat is not stopped (a working agent that bursts is
 * slowed, not ended) — a seat that keeps calling meets its refusal budget instead.
 *
 * Real agents' acts are a few pushes, file writes and checkpoints a minute and their egress
 * connections (each an act of about 1 KiB of records): 2 MiB a minute is about 2,000 such
 * connections, or 450 checkpoints with the longest note, every minute.
 */
export type ActBudget = Rate;

export const DEFAULT_ACT_BUDGET: ActBudget = Object.freeze({ burst: 16 * 2 ** 20, perMinute: 2 * 2 ** 20 });

/** A retry's recorded state: the request's status and its intent, with the intent's fields by key. */
export interface Replay {
  readonly state: RequestState;
  readonly intent: LedgerEntry;
  field(key: string): string;
}

export interface ContextOptions {
  readonly quiet?: boolean;
  readonly guardInAct?: boolean;
}

export interface PipelineDeps {
  ledger(): Ledger | undefined;
  /** The decision clock (epoch ms): the composition root's, so a test can fix it. */
  readonly clock: () => number;
  /** Decisions taken per event-loop turn (decision-lock.ts). */
  readonly decisionsPerTurn?: number;
  /** Default: DEFAULT_REFUSAL_BUDGET. */
  readonly refusalBudget?: RefusalBudget;
  /** Default: DEFAULT_ACT_BUDGET (bytes of records). */
  readonly actBudget?: ActBudget;
  /** Default: DEFAULT_SERVED_RATE (distinct served reads). */
  readonly servedRate?: Rate;
  /**
   * A seat's refusal found its budget empty (that refusal is recorded): stop the seat, with
   * `why` as the stop's reason. Called once per run; the composition root's (the pipeline may
   * not reach lifecycle/).
   */
  readonly onRefusalBudget?: (identity: SeatIdentity, why: string) => void;
  /** The daemon's log: a refusal the store would not take is said there (it still refuses). */
  readonly log?: (line: string) => void;
}

const seatKey = (identity: SeatIdentity) => `${identity.team}\0${identity.seat}`;

export function createSeatPipeline(deps: PipelineDeps): SeatPipeline {
  const { clock } = deps;
  const lock = createDecisionLock(deps.decisionsPerTurn);
  const last = new Map<string, Refusal>();
  const budget = deps.refusalBudget ?? DEFAULT_REFUSAL_BUDGET;
  const refusals = createTokenBuckets(budget, clock);
  const halted = new Set<string>();
  const actBudget = deps.actBudget ?? DEFAULT_ACT_BUDGET;
  const acts = createTokenBuckets(actBudget, clock);
  const servedRate = deps.servedRate ?? DEFAULT_SERVED_RATE;
  const servedBuckets = createTokenBuckets(servedRate, clock);
  /** Open windows of served reads: the first serve's record, and the repeats since. */
  const windows = new Map<string, { first: number; repeats: number; readonly recorded: Promise<boolean> }>();

  function servedDraft(identity: SeatIdentity, read: ServedRead, extra: readonly { key: string; value: string }[]): RecordDraft {
    return {
      type: RecordType.SERVED,
      team: identity.team,
      actor: seatPrincipal(identity.team, identity.seat),
      action: read.action,
      payload: { target: read.target, fields: [...read.fields, ...extra] },
    };
  }

  /** The served-read refusal, when the seat's rate of distinct serves is spent. */
  function servedRateSpent(identity: SeatIdentity): Refusal | undefined {
    const wait = servedBuckets.waitMs(seatKey(identity));
    if (wait === 0) return undefined;
    return refuse(
      "seat.served-rate",
      `this seat was served ${servedBuckets.taken(seatKey(identity))} distinct reads this run, past its served-read rate (${servedRate.burst} at once, then ${servedRate.perMinute} a minute); it may read again in ${Math.ceil(wait / 1000)} s`,
    );
  }

  /** Close a window: its repeats, if any, become one record with their count. */
  function closeWindow(key: string, ledger: Ledger, identity: SeatIdentity, read: ServedRead): void {
    const open = windows.get(key);
    windows.delete(key);
    if (open === undefined || open.repeats === 0) return;
    const draft = servedDraft(identity, read, [
      { key: "count", value: String(open.repeats) },
      { key: "repeats_of", value: String(open.first) },
    ]);
    acts.take(seatKey(identity), approxRecordBytes(draft));
    ledger
      .append(draft)
      .catch((error: unknown) =>
        deps.log?.(
          `the repeats of a read served to ${identity.team}/${identity.seat} (${read.action}) were not recorded: ${error instanceof Error ? error.message : String(error)}`,
        ),
      );
  }

  /** One refusal against the seat's budget (one already on record: an act's outcome); the one that finds it empty stops the seat. */
  function charge(identity: SeatIdentity): void {
    const k = seatKey(identity);
    if (refusals.take(k, 1) >= 0 || halted.has(k)) return;
    halted.add(k);
    stopForBudget(identity);
  }

  /** The seat found its refusal budget empty: it is stopped (the daemon's onRefusalBudget), once. */
  function stopForBudget(identity: SeatIdentity): void {
    deps.onRefusalBudget?.(
      identity,
      `halted: refusal budget (${refusals.taken(seatKey(identity))} refusals this run; the budget is ${budget.burst} at once, then ${budget.perMinute} a minute)`,
    );
  }

  /** The act budget's refusal, when the seat's bucket of record bytes is empty (recorded by the caller). */
  function actBudgetSpent(identity: SeatIdentity): Refusal | undefined {
    const k = seatKey(identity);
    const wait = acts.waitMs(k);
    if (wait === 0) return undefined;
    const mib = (n: number) => `${(n / 2 ** 20).toFixed(n % 2 ** 20 === 0 ? 0 : 1)} MiB`;
    return refuse(
      "seat.act-budget",
      `this seat's acts made about ${mib(acts.taken(k))} of ledger records this run, past its act budget (${mib(actBudget.burst)} at once, then ${mib(actBudget.perMinute)} a minute); it may act again in ${Math.ceil(wait / 1000)} s`,
    );
  }

  /**
   * The one builder of a seat's REFUSAL records (§15: every refused attempt is recorded).
   * A reason echoes what the seat sent (a path, a ref, an id): each long input the pipeline
   * knows (`inputs`: the request's strings, the target) is cut where it is echoed, with its own
   * length and hash; then the reason as a whole is bounded, with its length and hash (issue 20).
   */
  async function record(
    identity: SeatIdentity,
    ledger: Ledger | undefined,
    unbounded: Refusal,
    action: string,
    unboundedTarget?: TargetInit,
    remember = true,
    inputs: readonly string[] = [],
    weight = 1,
  ): Promise<RefusalError> {
    const known = unboundedTarget?.name ? [...inputs, unboundedTarget.name] : inputs;
    const refusal = refuse(unbounded.rule, boundText(boundEchoes(unbounded.reason, known, RECORD_NAME_BYTES), RECORD_TEXT_BYTES));
    const target = unboundedTarget === undefined ? undefined : { ...unboundedTarget, name: boundText(unboundedTarget.name ?? "", RECORD_NAME_BYTES) };
    if (remember) last.set(seatKey(identity), refusal);
    const k = seatKey(identity);
    // Past its budget the seat is being stopped: its further refusals are refused, not recorded
    // (a flood of stream resets put ~1,000 on record in the ~200 ms the stop takes, against a
    // budget of 300: found by an attack, round nineteen).
    if (halted.has(k)) return RefusalError.from(refusal);
    // The budget is taken before the record is written, so refusals made faster than records are
    // written cannot outrun it; the one that finds it empty is on record before the seat stops.
    const within = refusals.take(k, Math.max(1, Math.floor(weight))) >= 0;
    if (!within) halted.add(k);
    // §15 records refused attempts too; where the store is what refused, it cannot: the
    // refusal still happens (fail closed) — the caller is refused whether or not this lands.
    if (ledger === undefined || ledger.state.status !== "ready") {
      deps.log?.(`refusal ${refusal.rule} of ${identity.team}/${identity.seat} (${action}) not recorded: the ledger is ${ledger?.state.status ?? "absent"}`);
    } else {
      await ledger
        .append({
          type: RecordType.REFUSAL,
          team: identity.team,
          actor: seatPrincipal(identity.team, identity.seat),
          action,
          payload: { ...(target ? { target } : {}), detail: { case: "refusal", value: { rule: refusal.rule, reason: refusal.reason } } },
        })
        .catch((error: unknown) =>
          deps.log?.(
            `refusal ${refusal.rule} of ${identity.team}/${identity.seat} (${action}) not recorded: ${error instanceof Error ? error.message : String(error)}`,
          ),
        );
    }
    if (!within) stopForBudget(identity);
    return RefusalError.from(refusal);
  }

  /** The first of an intent's seat-supplied strings over INTENT_TEXT_BYTES: never cut (a retry and a reconciliation look them up), refused. */
  function overlong(target: TargetInit, requestId: string, payload: SubmitRequest["payload"]): string | undefined {
    const named: [string, string][] = [
      ["target", target.name ?? ""],
      ["request id", requestId],
      ...(payload?.fields ?? []).map((f): [string, string] => [`field ${f.key ?? ""}`, f.value ?? ""]),
    ];
    for (const [what, value] of named) {
      const bytes = utf8Bytes(value);
      if (bytes > INTENT_TEXT_BYTES) return `the act's ${what} is ${bytes} bytes; an act's names are at most ${INTENT_TEXT_BYTES} bytes (shorten it)`;
    }
    return undefined;
  }

  function asRefusal(error: unknown): Refusal | undefined {
    if (error instanceof RefusalError) return refuse(error.rule, error.reason);
    if (error instanceof LedgerRefusal) return error.refusal;
    return undefined;
  }

  async function context(identity: SeatIdentity, action: string, options: ContextOptions = {}): Promise<SeatContext> {
    const ledger = deps.ledger();
    const fail = (refusal: Refusal) => record(identity, ledger, refusal, action, undefined, !options.quiet);
    if (halted.has(seatKey(identity)))
      throw await fail(
        refuse(
          "seat.refusal-budget",
          `this seat made ${refusals.taken(seatKey(identity))} refusals, past its budget (${budget.burst} at once, then ${budget.perMinute} a minute); it is being stopped, and runs again when the owner starts it`,
        ),
      );
    if (ledger === undefined) throw await fail(refuse("ledger.unavailable", "this machine has no ledger; the owner runs teamd init"));
    const guarded = options.guardInAct ? undefined : ledger.guard(identity.team);
    if (guarded !== undefined) throw await fail(guarded);
    let read: { team: TeamState | undefined; policy: PolicyInForce };
    try {
      read = { team: ledger.view.team(identity.team), policy: policyInForce(ledger, identity.team) };
    } catch (error) {
      const refusal = asRefusal(error);
      if (refusal === undefined) throw error;
      throw await fail(refusal);
    }
    const { team, policy } = read;
    const seat = Object.prototype.hasOwnProperty.call(policy.policy.seats, identity.seat) ? policy.policy.seats[identity.seat] : undefined;
    if (team === undefined) throw await fail(refuse("team.unknown", `team '${identity.team}' is not registered on this machine`));
    if (seat === undefined)
      throw await fail(
        refuse(
          "seat.unknown",
          `seat '${identity.seat}' is not in team '${identity.team}''s policy in force (record ${policy.seq}); the owner applies a team file that declares it`,
        ),
      );
    return { identity, ledger, team, policy, seat };
  }

  /** The strings a kernel request carries (paths, names): what a reason about it may echo. */
  function inputsOf(request: Omit<KernelRequest, "seat"> | undefined): string[] {
    if (request === undefined) return [];
    const effect = Object.values(request.effect as Record<string, unknown>).flatMap((v) =>
      typeof v === "string" ? [v] : Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [],
    );
    return [...effect, request.capability, request.asAccount ?? "", request.brokerOperation ?? ""];
  }

  /**
   * §3: every content-bearing diagnostic stays within the requester's read scope. A trunk act's
   * paths come from the hub, not from the seat (GatedAct.pathsFromHub), so a refusal naming one the seat may not read
   * (a gater bounded to src/api/ refused over secret/x) would show it a name its filtered
   * history hides: each such path is withheld from the reason, in the reply and the record.
   */
  function withholdUnreadable(ctx: SeatContext, request: Omit<KernelRequest, "seat"> | undefined, refusal: Refusal): Refusal {
    const paths = request?.effect?.paths;
    if (paths === undefined || paths.length === 0 || readIsUnbounded(ctx.policy.policy, ctx.seat)) return refusal;
    const scope = readScope(ctx.policy.policy, ctx.seat, clock());
    const hidden = paths.filter((p) => !scope.file(p)).sort((a, b) => b.length - a.length);
    if (hidden.length === 0) return refusal;
    let reason = refusal.reason;
    for (const path of hidden) reason = reason.split(path).join("(a path outside your read scope)");
    return refuse(refusal.rule, `${reason} [${hidden.length} path(s) of the change withheld: outside your read scope]`);
  }

  function viewFor(ctx: SeatContext, facts?: KernelFacts): KernelView {
    // The trunk acts bring their facts; every decision reads the team's leases (a capability may rest on one, §7).
    return decisionView(ctx.policy.policy, facts, leaseFactsFor(ctx.ledger, ctx.identity.team));
  }

  function authorizeFor(ctx: SeatContext, request: Omit<KernelRequest, "seat">, facts?: KernelFacts): ReturnType<typeof authorize> {
    return authorize(viewFor(ctx, facts), { ...request, seat: ctx.identity.seat }, clock());
  }

  return {
    context,
    decisionInputs(ctx) {
      return { view: viewFor(ctx), now: clock() };
    },
    async decide(ctx, request, action, facts) {
      const decision = authorizeFor(ctx, request, facts);
      if (decision.decision === "refuse") throw await record(ctx.identity, ctx.ledger, decision, action, undefined, true, inputsOf(request));
      return decision;
    },
    async act(ctx, request, gated, effect) {
      const release = await lock();
      let released = false;
      const free = () => {
        if (released) return;
        released = true;
        release();
      };
      try {
        // The guards run again inside submit, under this lock and before the intent takes its
        // place: a stop that landed while this call waited wins (src/ledger/dispatch.ts).
        const spent = actBudgetSpent(ctx.identity);
        if (spent !== undefined) throw await record(ctx.identity, ctx.ledger, spent, gated.action, gated.target, true, [gated.requestId]);
        // §15, one retry rule: a request id this seat already used is answered from the record
        // (byte-identical: the recorded result; another payload: request.replay-mismatch, the
        // ledger's dispatch decides both) before the kernel decides again — a retry after the
        // authority changed (a lease expired, a grant narrowed) is the act that happened, not a
        // new act refused.
        const principal = principalKey(seatPrincipal(ctx.identity.team, ctx.identity.seat));
        const usedByRecords = ctx.ledger.view.recordedRequest(principal, gated.requestId);
        if (usedByRecords !== undefined)
          throw await record(
            ctx.identity,
            ctx.ledger,
            refuse("request.replay-mismatch", `request id ${gated.requestId} was used for another request (records ${usedByRecords.seqs[0]})`),
            gated.action,
            gated.target,
            true,
            [gated.requestId],
          );
        const retry = ctx.ledger.view.request(principal, gated.requestId) !== undefined;
        // §8: a team past its unattended runtime is paused — no new act (a retry is the act that happened).
        const paused = retry ? undefined : runtimeRefusal(ctx.policy.policy, ctx.ledger.view.runtimeClock(ctx.identity.team), clock());
        if (paused !== undefined) throw await record(ctx.identity, ctx.ledger, paused, gated.action, gated.target, true, [gated.requestId]);
        const decision = request === undefined || retry ? undefined : authorizeFor(ctx, request, gated.facts);
        if (decision?.decision === "refuse")
          throw await record(
            ctx.identity,
            ctx.ledger,
            gated.pathsFromHub === true ? withholdUnreadable(ctx, request, decision) : decision,
            gated.action,
            gated.target,
            true,
            [...inputsOf(request), gated.requestId],
          );
        const payload = typeof gated.payload === "function" ? gated.payload(decision) : gated.payload;
        const long = overlong(gated.target, gated.requestId, payload);
        if (long !== undefined)
          throw await record(ctx.identity, ctx.ledger, refuse("request.malformed", long), gated.action, gated.target, true, [gated.requestId]);
        const actor = seatPrincipal(ctx.identity.team, ctx.identity.seat);
        const submitted: SubmitRequest = {
          actor,
          team: ctx.identity.team,
          ...(gated.type !== undefined ? { type: gated.type } : {}),
          requestId: gated.requestId,
          request: gated.request,
          action: gated.action,
          target: gated.target,
          // The capability and the scope of the authority that covered the act (§15).
          ...(decision ? { capability: capabilityUse(decision.capability, decision.authority.scope) } : {}),
          payload: {
            ...payload,
            domain: { team: ctx.identity.team, repositoryRoot: ctx.team.repository },
            rootGrant: decision?.authority.id ?? "",
            // The exact input state (§15): what another implementation needs to agree this is the same act.
            inputState: {
              treeHash: gated.treeHash ?? "",
              teamFileHash: ctx.policy.teamFileHashBytes,
              leaseSetHash: leaseSetHash(leaseFactsFor(ctx.ledger, ctx.identity.team)),
            },
          },
          // The intent holds its place in the chain: the next decision may go now, and
          // concurrent intents share one durable commit (the effect still waits for it).
          onQueued: free,
        };
        // The act's two records are charged to its act budget before they exist (the outcome's
        // note and reply once known): so concurrent acts cannot all pass one nearly empty bucket.
        const k = seatKey(ctx.identity);
        const cost = approxActBytes(submitted);
        acts.take(k, cost.intent + cost.outcome);
        const reply = await ctx.ledger.submit(submitted, effect);
        acts.take(k, approxOutcomeDetail(reply.note, reply.reply));
        return reply;
      } catch (error) {
        // The ledger records the refusals of a submit itself (src/ledger/dispatch.ts): not twice.
        if (error instanceof LedgerRefusal) {
          last.set(seatKey(ctx.identity), error.refusal);
          charge(ctx.identity);
          throw RefusalError.from(error.refusal);
        }
        throw error;
      } finally {
        free();
      }
    },
    async record(ctx, action, target, request, decide) {
      const release = await lock();
      try {
        const guarded = ctx.ledger.guard(ctx.identity.team);
        if (guarded !== undefined) throw await record(ctx.identity, ctx.ledger, guarded, action, target);
        const spent = actBudgetSpent(ctx.identity);
        if (spent !== undefined) throw await record(ctx.identity, ctx.ledger, spent, action, target);
        const paused = runtimeRefusal(ctx.policy.policy, ctx.ledger.view.runtimeClock(ctx.identity.team), clock());
        // §15, one retry rule, before the kernel decides again (under the lock: two copies of
        // one retry make one set of records): a request id this seat already used is answered
        // from its records when the bytes are the same, refused when they are not.
        const principal = principalKey(seatPrincipal(ctx.identity.team, ctx.identity.seat));
        if (request.id !== "") {
          const prior = ctx.ledger.view.recordedRequest(principal, request.id);
          const digest = toHex(request.digest);
          if (prior !== undefined && prior.action === action && prior.digest === digest) return { seq: prior.seqs[0] ?? 0, replayed: true };
          const used =
            prior !== undefined ? `records ${prior.seqs[0]}` : ctx.ledger.view.request(principal, request.id) !== undefined ? "an intent" : undefined;
          if (used !== undefined)
            throw await record(
              ctx.identity,
              ctx.ledger,
              refuse("request.replay-mismatch", `request id ${request.id} was used for another request (${used}); a retry must send the same bytes`),
              action,
              target,
              true,
              [request.id],
            );
        }
        // §8: paused past the runtime (a retry above is answered from its records all the same).
        if (paused !== undefined) throw await record(ctx.identity, ctx.ledger, paused, action, target);
        const decided = decide(viewFor(ctx), clock());
        if ("decision" in decided) throw await record(ctx.identity, ctx.ledger, decided, action, target);
        acts.take(
          seatKey(ctx.identity),
          decided.reduce((sum, draft) => sum + approxRecordBytes(draft), 0),
        );
        return { seq: (await ctx.ledger.appendBatch(decided)).seq, replayed: false };
      } catch (error) {
        // A batch the store refused: on record where the store can still take one (else refused unrecorded, §15).
        if (error instanceof LedgerRefusal) throw await record(ctx.identity, ctx.ledger, error.refusal, action, target);
        throw error;
      } finally {
        release();
      }
    },
    view: (ctx) => viewFor(ctx),
    clock,
    refuse: (ctx, refusal, action, target, weight) => record(ctx.identity, ctx.ledger, refusal, action, target, true, [], weight),
    refuseCall: (identity, refusal, action, target) => record(identity, deps.ledger(), refusal, action, target),
    outcomeRefusal(ctx, unbounded) {
      const refusal = refuse(unbounded.rule, boundText(unbounded.reason, RECORD_TEXT_BYTES));
      last.set(seatKey(ctx.identity), refusal);
      // On record already (the act's outcome), and an attempt all the same: it counts.
      charge(ctx.identity);
      return RefusalError.from(refusal);
    },
    async replay(ctx, requestId, action) {
      const state = ctx.ledger.view.request(principalKey(seatPrincipal(ctx.identity.team, ctx.identity.seat)), requestId);
      if (state === undefined) return undefined;
      const [intent] = ctx.ledger.entries(state.intentSeq, 1);
      if (intent === undefined || intent.action !== action) {
        throw await record(
          ctx.identity,
          ctx.ledger,
          refuse("request.replay-mismatch", `request id ${requestId} was used for another act (intent ${state.intentSeq})`),
          action,
          undefined,
          true,
          [requestId],
        );
      }
      return { state, intent, field: (key) => intent.payload?.fields.find((f) => f.key === key)?.value ?? "" };
    },
    async served(ctx, read) {
      const { identity } = ctx;
      // The key is a digest: an open window holds no seat-sized string (a 120 KiB path, twice).
      const key = `${seatKey(identity)}\0${read.action}\0${toHex(sha256(new TextEncoder().encode(read.subject)))}`;
      const open = windows.get(key);
      if (open !== undefined) {
        // A repeat goes out only once its first is on record; a first the store refused refuses it too.
        if (!(await open.recorded))
          throw await record(identity, ctx.ledger, refuse("ledger.unavailable", "the read could not be recorded"), read.action, read.target);
        open.repeats++;
        return open.first;
      }
      const spent = actBudgetSpent(identity) ?? servedRateSpent(identity);
      if (spent !== undefined) throw await record(identity, ctx.ledger, spent, read.action, read.target);
      servedBuckets.take(seatKey(identity), 1);
      const draft = servedDraft(identity, read, [{ key: "count", value: "1" }]);
      acts.take(seatKey(identity), approxRecordBytes(draft));
      // The window opens now: a concurrent copy of this serve is a repeat, not a second first record.
      let settle: (ok: boolean) => void = () => undefined;
      const window = { first: 0, repeats: 0, recorded: new Promise<boolean>((resolve) => (settle = resolve)) };
      windows.set(key, window);
      try {
        window.first = (await ctx.ledger.append(draft)).seq;
        settle(true);
      } catch (error) {
        windows.delete(key);
        settle(false);
        // Fail closed: a read whose record the store will not take is not served (§15).
        const refusal =
          error instanceof LedgerRefusal
            ? error.refusal
            : refuse("ledger.unavailable", `the read could not be recorded: ${error instanceof Error ? error.message : String(error)}`);
        throw await record(identity, ctx.ledger, refusal, read.action, read.target);
      }
      // Only the record's bounded parts stay in the closure.
      const stub: ServedRead = { action: read.action, subject: "", target: read.target, fields: read.fields };
      setTimeout(() => closeWindow(key, ctx.ledger, identity, stub), SERVED_WINDOW_MS).unref();
      return window.first;
    },
    async servedEnd(ctx, read, first, fields) {
      const { identity } = ctx;
      const draft = servedDraft(identity, { ...read, subject: "", fields: [] }, [{ key: "of", value: String(first) }, ...fields]);
      acts.take(seatKey(identity), approxRecordBytes(draft));
      await ctx.ledger
        .append(draft)
        .catch((error: unknown) =>
          deps.log?.(
            `the end of a read served to ${identity.team}/${identity.seat} (${read.action}, record ${first}) was not recorded: ${error instanceof Error ? error.message : String(error)}`,
          ),
        );
    },
    lastRefusal: (identity) => last.get(seatKey(identity)),
    openRun(identity) {
      const k = seatKey(identity);
      refusals.reset(k);
      halted.delete(k);
      acts.reset(k);
      servedBuckets.reset(k);
    },
  };
}

const encoder = new TextEncoder();

/**
 * The digest a request id is bound to: a retry must send byte-identical content (§15). Each
 * part is length-prefixed, so no two different lists of parts share a digest (a NUL inside a
 * part cannot shift where the next begins).
 */
export function requestBytes(parts: readonly (string | Uint8Array)[]): Uint8Array {
  return sha256(
    ...parts.flatMap((p) => {
      const bytes = typeof p === "string" ? encoder.encode(p) : p;
      return [encoder.encode(`${typeof p === "string" ? "s" : "b"}${bytes.byteLength}:`), bytes];
    }),
  );
}

/**
 * The run an authoring act (a push, a file write) came from, as its intent's fields: what makes
 * its commits the seat's own (src/ledger/trunk-facts.ts). A seat with no live run (its socket
 * opened for debugging) records none: its commits then have no known author.
 */
export function runFields(run: { readonly run: string; readonly home: string } | undefined): { key: string; value: string }[] {
  return run === undefined
    ? []
    : [
        { key: "run", value: run.run },
        { key: "home", value: run.home },
      ];
}
