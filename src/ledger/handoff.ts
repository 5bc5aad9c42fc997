import { isSeatRecord, type LedgerEntry } from "./entry.js";

/**
 * The handoff checkpoint (issue 27; the ownership protocol's halt_checkpoint): when the owner
 * or a bound halts a run, the host — never the agent, whose turn is over — writes down where
 * the run stood. Facts only where teamd holds the evidence (the run and its seat_start record;
 * the seat's branch tips in the hub; the acts the ledger holds for that run, each by its seq;
 * its last refusal; the envelope at the halt), and the seat's own checkpoint notes apart, as
 * hypotheses: they are the agent's words, which teamd recorded but cannot vouch for. It is one
 * CHECKPOINT record (append-only, signed like every record), shown by `teamd checkpoint show`
 * and handed read-only to the seat's next run (a new run: nothing carries on by itself).
 */
export const HANDOFF_FORMAT = "teamd.handoff/1";

/** What one handoff holds at most: a handoff is read by a person and an agent, not a log. */
export const HANDOFF_LIMITS = Object.freeze({
  /** The newest acts of the run, each with its record seq; older ones are counted. */
  acts: 200,
  /** The seat's branches in the hub. */
  tips: 64,
  /** The seat's newest notes of the run (each at most 4 KiB, MAX_CHECKPOINT_NOTE). */
  notes: 8,
  /** The records read after the run's start to find its acts (a very long run: its last this many). */
  scan: 100_000,
  /** The document's bytes: past this, the oldest acts listed go first. */
  bytes: 64 * 1024,
});

export interface HandoffAct {
  readonly seq: number;
  readonly type: string;
  readonly action: string;
  readonly target: string;
  readonly result: string;
}

export interface Handoff {
  readonly format: typeof HANDOFF_FORMAT;
  readonly team: string;
  readonly seat: string;
  readonly run: {
    readonly id: string;
    /** The run's seat_start record. */
    readonly startSeq: number;
    readonly startedAt: string;
    readonly haltedAt: string;
    readonly state: "suspended";
    readonly haltedBy: string;
    readonly reason: string;
  };
  /** What teamd holds evidence for; each names its evidence. */
  readonly facts: {
    readonly tips: { readonly evidence: string; readonly refs: readonly { readonly ref: string; readonly commit: string }[]; readonly total: number };
    readonly acts: {
      readonly evidence: string;
      readonly list: readonly HandoffAct[];
      /** The run's acts found, listed or not; the served reads are counted apart. */
      readonly total: number;
      readonly served: number;
      /** The first record read (a run longer than HANDOFF_LIMITS.scan records: not its start). */
      readonly scannedFrom: number;
      readonly scannedTo: number;
    };
    readonly lastRefusal: { readonly seq: number; readonly action: string; readonly rule: string; readonly reason: string } | null;
    readonly envelope: {
      readonly evidence: string;
      readonly runtime: { readonly limitMs: number; readonly leftMs: number; readonly renewedAt: string } | null;
      readonly lab: string | null;
    };
  };
  /** The seat's own notes (teamd-shim checkpoint) in this run: what the agent said, unverified. */
  readonly hypotheses: {
    readonly evidence: string;
    readonly notes: readonly { readonly seq: number; readonly at: string; readonly note: string }[];
    readonly total: number;
  };
}

export interface HaltedRun {
  readonly team: string;
  readonly seat: string;
  readonly runId: string;
  readonly startSeq: number;
  readonly startedAt: string;
  readonly lab?: string;
  readonly haltedBy: string;
  readonly reason: string;
}

/** The run's records, read once: its acts, last refusal and notes (pure over the entries). */
export function runEvidence(entries: Iterable<LedgerEntry>, team: string, seat: string) {
  const acts: HandoffAct[] = [];
  let total = 0;
  let served = 0;
  let lastRefusal: Handoff["facts"]["lastRefusal"] = null;
  const notes: { seq: number; at: string; note: string }[] = [];
  let noteCount = 0;
  for (const entry of entries) {
    if (entry.team !== team || !isSeatRecord(entry, seat, team)) continue;
    // The daemon's and the owner's records about the seat (its start, a freeze) are not the
    // seat's acts; an act's outcome is (the daemon writes it, signed for the seat).
    if (!entry.signer.startsWith("seat:")) continue;
    if (entry.type === "served") {
      served++;
      continue;
    }
    total++;
    acts.push({ seq: entry.seq, type: entry.type, action: entry.action, target: entry.target, result: entry.result });
    if (acts.length > HANDOFF_LIMITS.acts) acts.shift();
    if (entry.type === "refusal") {
      const detail = entry.payload?.detail;
      lastRefusal = {
        seq: entry.seq,
        action: entry.action,
        rule: detail?.case === "refusal" ? detail.value.rule : entry.result,
        reason: detail?.case === "refusal" ? detail.value.reason : "",
      };
    }
    if (entry.type === "intent" && entry.action === "seat.checkpoint") {
      noteCount++;
      const note = entry.payload?.fields.find((f) => f.key === "note")?.value ?? "";
      notes.push({ seq: entry.seq, at: new Date(entry.timeUnixMs).toISOString(), note });
      if (notes.length > HANDOFF_LIMITS.notes) notes.shift();
    }
  }
  return { acts, total, served, lastRefusal, notes, noteCount };
}

/** The document, whole and bounded: the oldest listed acts go first when it is too long. */
export function composeHandoff(
  run: HaltedRun,
  haltedAt: number,
  tips: { refs: { ref: string; commit: string }[]; total: number },
  evidence: ReturnType<typeof runEvidence>,
  scanned: { from: number; to: number },
  runtime: Handoff["facts"]["envelope"]["runtime"],
): Handoff {
  const make = (acts: readonly HandoffAct[], notes: Handoff["hypotheses"]["notes"], refs: Handoff["facts"]["tips"]["refs"]): Handoff => ({
    format: HANDOFF_FORMAT,
    team: run.team,
    seat: run.seat,
    run: {
      id: run.runId,
      startSeq: run.startSeq,
      startedAt: run.startedAt,
      haltedAt: new Date(haltedAt).toISOString(),
      state: "suspended",
      haltedBy: run.haltedBy,
      reason: run.reason,
    },
    facts: {
      tips: { evidence: "the hub's refs under refs/heads/seat/SEAT/ at the halt", refs, total: tips.total },
      acts: {
        evidence: "the ledger's records of this run, by seq (teamd log --seat SEAT)",
        list: acts,
        total: evidence.total,
        served: evidence.served,
        scannedFrom: scanned.from,
        scannedTo: scanned.to,
      },
      lastRefusal: evidence.lastRefusal,
      envelope: { evidence: "the policy in force and the daemon's clock at the halt", runtime, lab: run.lab ?? null },
    },
    hypotheses: {
      evidence: "the seat's own notes (teamd-shim checkpoint), recorded as it said them: not verified by teamd",
      notes,
      total: evidence.noteCount,
    },
  });
  let acts = evidence.acts;
  let notes = evidence.notes;
  let refs = tips.refs;
  const over = (h: Handoff) => Buffer.byteLength(JSON.stringify(h)) > HANDOFF_LIMITS.bytes;
  let handoff = make(acts, notes, refs);
  while (acts.length > 0 && over(handoff)) {
    acts = acts.slice(Math.ceil(acts.length / 4));
    handoff = make(acts, notes, refs);
  }
  // The acts alone did not bound it: eight notes of 4 KiB of control characters (six bytes each
  // in JSON) and 64 branch names near git's 1 KiB reach ~260 KiB (an attack from a seat:
  // test/escape/envelope-attack.test.ts). The oldest notes go next, then the last tips; each
  // keeps its total, so what is left out is still counted.
  while (notes.length > 1 && over(handoff)) {
    notes = notes.slice(1);
    handoff = make(acts, notes, refs);
  }
  while (refs.length > 0 && over(handoff)) {
    refs = refs.slice(0, Math.floor(refs.length / 2));
    handoff = make(acts, notes, refs);
  }
  return handoff;
}

/** A handoff with its CHECKPOINT record. */
export interface RecordedHandoff {
  readonly seq: number;
  readonly handoff: Handoff;
}

/** The seat's last handoff on record, per team (halts are rare: the CHECKPOINT records are read by their type's index). */
export function lastHandoffs(
  read: (from: number, limit: number) => LedgerEntry[],
  seat: string,
  team?: string,
  tombstoned: (seq: number) => boolean = () => false,
): Map<string, RecordedHandoff> {
  const found = new Map<string, RecordedHandoff>();
  for (let at = 0; ;) {
    const page = read(at, 500);
    if (page.length === 0) return found;
    for (const entry of page) {
      at = entry.seq + 1;
      const detail = entry.payload?.detail;
      if ((team !== undefined && entry.team !== team) || detail?.case !== "checkpoint" || detail.value.handoff === "") continue;
      if (entry.payload?.target?.name !== seat) continue;
      // A tombstoned handoff is hidden (§15): neither shown nor handed on — and an older one is not
      // handed on in its place (it no longer says where the seat last stood).
      if (tombstoned(entry.seq)) {
        found.delete(entry.team);
        continue;
      }
      try {
        found.set(entry.team, { seq: entry.seq, handoff: JSON.parse(detail.value.handoff) as Handoff });
      } catch {
        // A record that does not parse is not a handoff (verify says what is wrong with the ledger).
      }
    }
  }
}
