import { OutcomeResult, PrincipalKind, ReconcileDecision, RecordType, type Principal } from "../gen/teamd/v1/ledger_pb.js";
import type { AuthorFact, GatedAct, GateRecordFact, IntentFact, KernelFacts, OutcomeFact, ReviewRecordFact, RunFact } from "../kernel/facts.js";
import type { WalkedRecord } from "./chain-walk.js";
import { principalKey, toHex, toSafeNumber } from "./codec.js";

/**
 * The trunk facts (§5, §15): what the kernel reads to decide review, gate, merge and deploy,
 * projected from the seats' own acts as the dispatcher records them (intent, then outcome):
 *
 * - `git.push` — fields `commit` (repeated), `run`, `home`: once done, each commit's author.
 * - `review` — effect id, field `verdict` (approve | reject): counts once done.
 * - `gate` — effect id, root grant (the gate authority), field `result` (pass | refuse):
 *   counts once done; its id, what a merge consumes, is the intent's seq.
 * - `merge` — effect id, field `consumes` (a gate id).
 * - `deploy` — effect id, field `env`.
 *
 * Fed every record in chain order, by the view's `apply`, so it is built the same way on
 * append and on reopen. It is derived state only.
 *
 * An unknown outcome stays unknown until a reconciliation resolves it: accept-done and
 * resolved-done turn it into done (the effect happened: the review, the gate, the authorship
 * count), resolved-not-done into refused (still voiding, as a refused outcome does, and
 * releasing a merge's pass). A repeat asserts neither, so the original stays unknown: its
 * outcome keeps voiding passes for the effect id and a merge keeps its pass consumed.
 *
 * A push, review or gate by a principal that is not a seat of the record's team is never
 * counted (authorship stays unknown, the verdict absent: the kernel refuses). Intents,
 * outcomes and consumption count whoever made them: they only ever narrow what is allowed.
 */

export interface CommitAuthor {
  readonly seat: string;
  readonly run: string;
  readonly home: string;
}

export interface TrunkQuery {
  /** The act's effect id (hex): lists are narrowed to it; without it, the whole team's. */
  readonly effectId?: string;
  /** Every commit of the change: its author set is `authors[effectId]` (needs effectId). */
  readonly commits?: readonly string[];
  /** Live runs and homes by seat, from the seat manager; passed through. */
  readonly runs?: Readonly<Record<string, RunFact>>;
}

export interface TrunkFactsView {
  /** The author facts of one commit (who pushed it, from which run and home), or undefined when no seat's push of it is done. If several seats pushed the same commit, the first DONE push wins. */
  commitAuthor(team: string, commit: string): CommitAuthor | undefined;
  /**
   * KernelFacts for one decision: gates, reviews, intents, outcomes and consumed gate ids of
   * this team — narrowed to `effectId` when given (the kernel reads only the act's own effect
   * id; consumed then names the consumed gates of that effect id), the whole team's otherwise
   * — plus `authors[effectId]` computed from `commits` (every commit of the change): present
   * only when EVERY commit has a known author (else absent: the kernel reads that as unknown
   * authorship and refuses), deduplicated by (seat, run, home). `runs` are supplied by the
   * caller (live runs come from the seat manager, not the ledger) and passed through.
   */
  trunkFacts(team: string, query: TrunkQuery): KernelFacts;
}

export interface TrunkProjector extends TrunkFactsView {
  apply(record: WalkedRecord): void;
  snapshot(): unknown;
}

/** push and write author commits (a file write makes one commit, named in its outcome's reply); the rest are gated acts. */
type TrunkAct = "push" | "write" | GatedAct;

/** The actions whose records the trunk facts read (authorship, reviews, gates, passes, runs). */
export const TRUNK_ACTIONS: Readonly<Record<string, TrunkAct>> = {
  "git.push": "push",
  "file.write": "write",
  review: "review",
  gate: "gate",
  merge: "merge",
  deploy: "deploy",
};

/** An intent whose outcome may still change what it contributes: pending, or unknown and unresolved. */
interface OpenAct {
  readonly seq: number;
  readonly team: string;
  readonly act: TrunkAct;
  readonly effectId: string;
  readonly seat: string;
  /** The actor is a seat of the record's team: only then does its push, review or gate count. */
  readonly member: boolean;
  readonly authority: string;
  readonly fields: ReadonlyMap<string, readonly string[]>;
  unknown: boolean;
}

interface EffectFacts {
  /** Keyed by intent seq; every map is read back in seq order. */
  readonly intents: Map<number, IntentFact>;
  readonly outcomes: Map<number, OutcomeFact>;
  readonly gates: Map<number, GateRecordFact>;
  readonly reviews: Map<number, ReviewRecordFact>;
}

interface TeamTrunk {
  readonly authors: Map<string, CommitAuthor>;
  readonly effects: Map<string, EffectFacts>;
  /** Gate id → the seqs of merge intents holding it (pending, done or unknown). */
  readonly consumers: Map<string, Set<number>>;
}

const bySeq = <T>(map: ReadonlyMap<number, T>): T[] => [...map].sort(([a], [b]) => a - b).map(([, v]) => v);
const byKey = <T>(entries: Iterable<[string, T]>): Record<string, T> => Object.fromEntries([...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

function fieldsOf(fields: readonly { readonly key: string; readonly value: string }[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const f of fields) {
    const list = out.get(f.key);
    if (list) list.push(f.value);
    else out.set(f.key, [f.value]);
  }
  return out;
}

/** A single-valued field: absent, empty or repeated with different values reads as absent (never guessed). */
function one(fields: ReadonlyMap<string, readonly string[]>, key: string): string | undefined {
  const values = fields.get(key);
  if (!values || values.length === 0) return undefined;
  const first = values[0] as string;
  return first !== "" && values.every((v) => v === first) ? first : undefined;
}

function seatOf(actor: Principal | undefined, team: string): { seat: string; member: boolean } {
  if (actor?.kind === PrincipalKind.SEAT && actor.seat !== "") return { seat: actor.seat, member: actor.team === team };
  return { seat: principalKey(actor), member: false };
}

export function createTrunkProjector(): TrunkProjector {
  const teams = new Map<string, TeamTrunk>();
  const open = new Map<number, OpenAct>();

  const teamOf = (team: string): TeamTrunk => {
    let t = teams.get(team);
    if (!t) {
      t = { authors: new Map(), effects: new Map(), consumers: new Map() };
      teams.set(team, t);
    }
    return t;
  };

  const effectOf = (t: TeamTrunk, effectId: string): EffectFacts => {
    let e = t.effects.get(effectId);
    if (!e) {
      e = { intents: new Map(), outcomes: new Map(), gates: new Map(), reviews: new Map() };
      t.effects.set(effectId, e);
    }
    return e;
  };

  const release = (t: TeamTrunk, act: OpenAct) => {
    for (const gate of act.fields.get("consumes") ?? []) {
      const holders = t.consumers.get(gate);
      holders?.delete(act.seq);
      if (holders?.size === 0) t.consumers.delete(gate);
    }
  };

  function onIntent(seq: number, record: WalkedRecord, act: TrunkAct): void {
    const { header, payload } = record;
    const team = header.team;
    const { seat, member } = seatOf(header.actor, team);
    const fields = fieldsOf(payload.fields);
    const effectId = toHex(payload.effectId);
    const t = teamOf(team);
    if (act !== "push" && act !== "write") {
      if (effectId !== "") effectOf(t, effectId).intents.set(seq, Object.freeze({ effectId, act, seat }));
      // Consumed from the intent on: a pass an in-flight merge took must not serve another.
      if (act === "merge")
        for (const gate of fields.get("consumes") ?? []) {
          if (gate === "") continue;
          const holders = t.consumers.get(gate) ?? new Set<number>();
          holders.add(seq);
          t.consumers.set(gate, holders);
        }
    }
    open.set(seq, { seq, team, act, effectId, seat, member, authority: payload.rootGrant, fields, unknown: false });
  }

  /** `at`: the seq of the record that says so; a voiding outcome keeps the position where it first voided (unknown, then resolved not done). */
  function setOutcome(act: OpenAct, result: OutcomeFact["result"], at: number): void {
    if (act.act === "push" || act.act === "write" || act.effectId === "") return;
    const outcomes = effectOf(teamOf(act.team), act.effectId).outcomes;
    const env = act.act === "deploy" ? one(act.fields, "env") : undefined;
    const voidedAt = result === "done" ? undefined : (outcomes.get(act.seq)?.at ?? at);
    const fact: OutcomeFact = {
      effectId: act.effectId,
      act: act.act,
      result,
      ...(env !== undefined ? { env } : {}),
      ...(voidedAt !== undefined ? { at: voidedAt } : {}),
    };
    outcomes.set(act.seq, Object.freeze(fact));
  }

  function done(act: OpenAct, reply: Uint8Array | undefined): void {
    const t = teamOf(act.team);
    if (!act.member) return;
    switch (act.act) {
      case "push":
      case "write": {
        const run = one(act.fields, "run");
        const home = one(act.fields, "home");
        if (run === undefined || home === undefined) return;
        const author = Object.freeze({ seat: act.seat, run, home });
        // A push names its commits in the intent; a file write's one commit is made in the effect,
        // so its outcome's reply names it (an outcome resolved by the owner carries none: unknown).
        const written = act.act === "write" && reply !== undefined ? new TextDecoder().decode(reply) : "";
        const commits = act.act === "push" ? (act.fields.get("commit") ?? []) : /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/.test(written) ? [written] : [];
        for (const commit of commits) if (commit !== "" && !t.authors.has(commit)) t.authors.set(commit, author);
        return;
      }
      case "review": {
        const verdict = one(act.fields, "verdict");
        if (act.effectId === "" || (verdict !== "approve" && verdict !== "reject")) return;
        effectOf(t, act.effectId).reviews.set(act.seq, Object.freeze({ effectId: act.effectId, seat: act.seat, verdict }));
        return;
      }
      case "gate": {
        const result = one(act.fields, "result");
        if (act.effectId === "" || act.authority === "" || (result !== "pass" && result !== "refuse")) return;
        effectOf(t, act.effectId).gates.set(
          act.seq,
          Object.freeze({ id: String(act.seq), effectId: act.effectId, signer: act.seat, authority: act.authority, result, at: act.seq }),
        );
        return;
      }
      default:
        return;
    }
  }

  function settle(act: OpenAct, result: "done" | "refused", at: number, reply?: Uint8Array): void {
    open.delete(act.seq);
    setOutcome(act, result, at);
    if (result === "done") done(act, reply);
    else if (act.act === "merge") release(teamOf(act.team), act);
  }

  function onOutcome(seq: number, intentSeq: number, result: OutcomeResult, reply: Uint8Array): void {
    const act = open.get(intentSeq);
    if (!act || act.unknown) return;
    if (result === OutcomeResult.DONE) settle(act, "done", seq, reply);
    else if (result === OutcomeResult.UNKNOWN) {
      act.unknown = true;
      setOutcome(act, "unknown", seq);
    } else settle(act, "refused", seq);
  }

  function onResolution(seq: number, intentSeq: number, decision: ReconcileDecision): void {
    const act = open.get(intentSeq);
    if (!act?.unknown) return;
    if (decision === ReconcileDecision.ACCEPT_DONE || decision === ReconcileDecision.RESOLVED_DONE) settle(act, "done", seq);
    else if (decision === ReconcileDecision.RESOLVED_NOT_DONE) settle(act, "refused", seq);
    // A repeat is the last word on this intent (the ledger accepts one resolution): drop it, unknown.
    else if (decision === ReconcileDecision.REPEAT) open.delete(intentSeq);
  }

  function apply(record: WalkedRecord): void {
    const { seq, header, payload } = record;
    const detail = payload.detail;
    // A gate or review decision is written as its own type (§15), an intent all the same.
    if (header.type === RecordType.INTENT || header.type === RecordType.GATE || header.type === RecordType.REVIEW) {
      const act = Object.prototype.hasOwnProperty.call(TRUNK_ACTIONS, header.action) ? TRUNK_ACTIONS[header.action] : undefined;
      if (act) onIntent(seq, record, act);
    } else if (header.type === RecordType.OUTCOME && detail.case === "outcome") {
      onOutcome(seq, toSafeNumber(detail.value.intentSeq, "intent seq"), detail.value.result, detail.value.reply);
    } else if (header.type === RecordType.RECONCILE && detail.case === "reconcile" && detail.value.subject.case === "outcome") {
      const o = detail.value.subject.value;
      onResolution(seq, toSafeNumber(o.intentSeq, "intent seq"), o.decision);
    }
  }

  function authorsFor(t: TeamTrunk, commits: readonly string[]): AuthorFact[] | undefined {
    if (commits.length === 0) return undefined;
    const seen = new Map<string, AuthorFact>();
    for (const commit of commits) {
      const a = t.authors.get(commit);
      if (!a) return undefined;
      seen.set(`${a.seat}\u0000${a.run}\u0000${a.home}`, a);
    }
    return [...seen.values()];
  }

  function trunkFacts(team: string, query: TrunkQuery): KernelFacts {
    const t = teams.get(team);
    const effects: EffectFacts[] = [];
    let gateIds: Iterable<string>;
    if (query.effectId !== undefined) {
      const e = t?.effects.get(query.effectId);
      if (e) effects.push(e);
      // The kernel asks only whether a pass of this effect id was consumed, and a pass's id is its gate intent's seq.
      gateIds = e ? [...e.intents].filter(([, i]) => i.act === "gate").map(([seq]) => String(seq)) : [];
    } else {
      if (t) effects.push(...t.effects.values());
      gateIds = t ? t.consumers.keys() : [];
    }
    const consumed = [...gateIds].filter((id) => (t?.consumers.get(id)?.size ?? 0) > 0);
    let authors: KernelFacts["authors"];
    if (query.effectId !== undefined && query.commits !== undefined && t) {
      const set = authorsFor(t, query.commits);
      if (set) authors = { [query.effectId]: set };
    }
    return {
      gates: effects.flatMap((e) => bySeq(e.gates)),
      reviews: effects.flatMap((e) => bySeq(e.reviews)),
      intents: effects.flatMap((e) => bySeq(e.intents)),
      outcomes: effects.flatMap((e) => bySeq(e.outcomes)),
      consumed,
      ...(authors !== undefined ? { authors } : {}),
      ...(query.runs !== undefined ? { runs: query.runs } : {}),
    };
  }
  return {
    apply,
    commitAuthor: (team, commit) => teams.get(team)?.authors.get(commit),
    trunkFacts,
    snapshot: () =>
      byKey(
        [...teams].map(([team, t]) => [
          team,
          {
            authors: byKey(t.authors),
            effects: byKey(
              [...t.effects].map(
                ([id, e]) =>
                  [id, { intents: bySeq(e.intents), outcomes: bySeq(e.outcomes), gates: bySeq(e.gates), reviews: bySeq(e.reviews) }] as [string, unknown],
              ),
            ),
            consumers: byKey([...t.consumers].map(([id, s]) => [id, [...s].sort((a, b) => a - b)] as [string, number[]])),
            open: [...open.values()]
              .filter((a) => a.team === team)
              .sort((a, b) => a.seq - b.seq)
              .map((a) => ({ seq: a.seq, act: a.act, unknown: a.unknown })),
          },
        ]),
      ),
  };
}
