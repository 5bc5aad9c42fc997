import { RecordType } from "../../src/gen/teamd/v1/ledger_pb.js";
import { describeStored } from "../../src/ledger/index.js";
import { UsageError } from "../../src/rpc/errors.js";
import { checkName } from "../host/names.js";
import { terminalJson, terminalText } from "../host/terminal-text.js";
import { lastHandoffs, type Handoff } from "../../src/ledger/handoff.js";
import { openLedgerReader, tombstonesFrom } from "./ledger-read.js";

/**
 * `teamd checkpoint show SEAT`: the seat's last handoff checkpoint (issue 27), read from the
 * ledger (read-only, beside the daemon or without it). Facts first, each with its evidence;
 * the seat's own notes last, marked as what they are. Every string a seat chose (a ref name,
 * a target, a note) is shown escaped: it must not drive the owner's terminal.
 */
export async function checkpointShow(spec: string, options: { team?: string; json?: boolean }): Promise<void> {
  const [seatName = "", inSpec, extra] = spec.split("@");
  if (extra !== undefined) throw new UsageError(`invalid seat '${spec}': expected SEAT or SEAT@TEAM`);
  if (inSpec !== undefined && options.team !== undefined && inSpec !== options.team)
    throw new UsageError(`'${spec}' names team '${inSpec}' but --team says '${options.team}'`);
  const seat = checkName("seat", seatName);
  const teamName = inSpec ?? options.team;
  const team = teamName === undefined ? undefined : checkName("team", teamName);
  const store = openLedgerReader();
  let found;
  try {
    const tombstones = tombstonesFrom(store, 0);
    found = lastHandoffs(
      (from, limit) => store.recordsOfType(RecordType.CHECKPOINT, from, limit).map(describeStored),
      seat,
      team,
      (seq) => tombstones.has(seq),
    );
  } finally {
    store.close();
  }
  if (found.size > 1) throw new UsageError(`seat '${seat}' has handoff checkpoints in several teams (${[...found.keys()].join(", ")}); name one: ${seat}@TEAM`);
  const last = [...found.values()][0];
  if (last === undefined) {
    if (options.json) process.stdout.write(JSON.stringify({ seat, team: team ?? null, checkpoint: null }) + "\n");
    else
      process.stdout.write(
        `${seat}${team !== undefined ? `@${team}` : ""}: no handoff checkpoint on record (one is made when teamd halts a run: teamd halt, or a bound)\n`,
      );
    return;
  }
  if (options.json) {
    // Through terminalJson like every --json view: JSON.stringify leaves a note's C1 controls
    // (U+009B is a CSI) and bidirectional overrides raw for the owner's terminal.
    process.stdout.write(terminalJson(JSON.stringify({ seq: last.seq, ...last.handoff })) + "\n");
    return;
  }
  process.stdout.write(handoffText(last.seq, last.handoff));
}

/** The handoff for a person: facts with their evidence, then the hypotheses, marked. */
export function handoffText(seq: number, h: Handoff): string {
  const t = terminalText;
  const lines: string[] = [];
  lines.push(`handoff checkpoint of ${t(h.seat)}@${t(h.team)} (record ${seq})`);
  lines.push(
    `run ${t(h.run.id)}: ${h.run.state}, halted by ${t(h.run.haltedBy)} at ${h.run.haltedAt} (${t(h.run.reason)}); started ${h.run.startedAt || "?"} (record ${h.run.startSeq})`,
  );
  lines.push("");
  lines.push("FACTS (teamd holds the evidence)");
  lines.push(`  branch tips in the hub (${h.facts.tips.total}):`);
  if (h.facts.tips.refs.length === 0) lines.push("    none");
  for (const r of h.facts.tips.refs) lines.push(`    ${r.commit.slice(0, 12)}  ${t(r.ref)}`);
  if (h.facts.tips.total > h.facts.tips.refs.length) lines.push(`    … ${h.facts.tips.total - h.facts.tips.refs.length} more (git for-each-ref in the hub)`);
  const acts = h.facts.acts;
  lines.push(`  acts recorded in the run (${acts.total}; ${acts.served} served reads apart; records ${acts.scannedFrom}–${acts.scannedTo} read):`);
  if (acts.list.length === 0) lines.push("    none");
  if (acts.total > acts.list.length) lines.push(`    … ${acts.total - acts.list.length} earlier (teamd log --seat ${t(h.seat)})`);
  for (const a of acts.list) lines.push(`    #${a.seq}  ${a.type}  ${t(a.action)}  ${t(a.target)}${a.result !== "" ? `  ${t(a.result)}` : ""}`);
  const refusal = h.facts.lastRefusal;
  lines.push(`  last refusal: ${refusal === null ? "none" : `#${refusal.seq} ${t(refusal.action)}: ${t(refusal.rule)} — ${t(refusal.reason)}`}`);
  const runtime = h.facts.envelope.runtime;
  lines.push(
    `  envelope at the halt: ${runtime === null ? "no runtime limit" : `runtime ${Math.round(runtime.leftMs / 1000)} s left of ${Math.round(runtime.limitMs / 1000)} s (renewed ${runtime.renewedAt})`}${h.facts.envelope.lab !== null ? `; lab ${t(h.facts.envelope.lab)}` : ""}`,
  );
  lines.push("");
  lines.push(`HYPOTHESES (the seat's own notes, unverified: ${h.hypotheses.total})`);
  if (h.hypotheses.notes.length === 0) lines.push("  none");
  for (const n of h.hypotheses.notes) {
    lines.push(`  #${n.seq} at ${n.at}:`);
    for (const line of n.note.split("\n")) lines.push(`    ${t(line)}`);
  }
  return lines.join("\n") + "\n";
}
