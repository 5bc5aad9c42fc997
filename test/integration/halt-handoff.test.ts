import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { initTeam, type TeamdHarness } from "../support/teamd-harness.js";

/**
 * A halt and the handoff the host builds (§8; issue 27; the ownership protocol's
 * halt_checkpoint), through a real daemon, a real seat and a real hub: `teamd halt` sends the
 * seat's command SIGTERM (it gets to exit: its trap writes a mark), then the kill; the run ends
 * `suspended` (never completed, never restarted by `restart: always`); the daemon records a
 * CHECKPOINT whose facts carry their evidence (the seat's tips in the hub, its acts by record
 * seq, its last refusal) and whose hypotheses are the seat's own notes, marked so; `teamd
 * checkpoint show` prints it; the seat's next run is a new run, handed the checkpoint read-only
 * (TEAMD_HANDOFF, `teamd-shim checkpoint --last`), and its start record names it.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const TEAM_FILE = teamFile(`  w:
    lab: anthropic
    capabilities:
      read: ~
      write: { path: src/ }
    start:
      command: [sh, -c, "trap 'echo term > $HOME/term.txt; exit 0' TERM; rm -f $HOME/term.txt; while :; do sleep 0.1; done"]
      restart: always
`);

interface HandoffJson {
  seq: number;
  format: string;
  team: string;
  seat: string;
  run: { id: string; startSeq: number; state: string; haltedBy: string; reason: string };
  facts: {
    tips: { refs: { ref: string; commit: string }[]; total: number };
    acts: { list: { seq: number; type: string; action: string; target: string; result: string }[]; total: number };
    lastRefusal: { seq: number; rule: string } | null;
  };
  hypotheses: { evidence: string; notes: { seq: number; note: string }[]; total: number };
}

describe.runIf(process.platform === "linux")("teamd halt and the handoff checkpoint (§8, issue 27)", () => {
  let h: TeamdHarness;
  let handoff: HandoffJson;
  const NOTE = "parser half done; next: the error paths in src/parse.txt";

  beforeAll(async () => {
    h = await initTeam("teamd-halt-", { files: { "README.md": "hello\n", "src/a.txt": "a\n" } });
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE);
    await h.ok(["apply", "--yes"]);
    await h.ok(["start", "w"]);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("halts the run as suspended, after SIGTERM and its grace, and records the handoff", async () => {
    // The run's acts: a file write (a tip in the hub), a refusal, the seat's own note.
    const wrote = await h.sh("w", "printf 'half\\n' | teamd-shim file write src/parse.txt --branch parser -m 'parser: start'");
    expect(wrote.code, wrote.stderr).toBe(0);
    const refused = await h.sh("w", "printf 'x\\n' | teamd-shim file write docs/x.txt --branch parser -m no");
    expect(refused.code).not.toBe(0);
    expect((await h.shim("w", "checkpoint", NOTE)).code).toBe(0);
    const halted = JSON.parse(await h.ok(["halt", "w", "--reason", "end of the day", "--json"])) as { halted: { seat: string; checkpointSeq: number }[] };
    expect(halted.halted).toHaveLength(1);
    const seq = halted.halted[0]?.checkpointSeq ?? 0;
    expect(seq).toBeGreaterThan(0);
    // SIGTERM first: the command's trap ran (a kill alone leaves no mark).
    expect(readFileSync(join(h.home, "seats/proj/w/home/term.txt"), "utf8")).toBe("term\n");
    const stops = (await h.records<{ type: string; seq: number; fields?: Record<string, string> }>("--seat", "w")).filter((r) => r.type === "seat_stop");
    expect(stops.at(-1)?.fields).toMatchObject({ run_state: "suspended", stopped_by: "owner", reason: "halted by the owner: end of the day" });
    handoff = JSON.parse(await h.ok(["checkpoint", "show", "w", "--json"])) as HandoffJson;
    expect(handoff.seq).toBe(seq);
    expect(handoff.run).toMatchObject({ state: "suspended", haltedBy: "owner", reason: "halted by the owner: end of the day" });
  }, 120_000);

  it("its facts carry their evidence: the hub's tips, the acts by record, the last refusal", async () => {
    const tip = h.hubGit("rev-parse", "refs/heads/seat/w/parser");
    expect(handoff.facts.tips.refs).toContainEqual({ ref: "refs/heads/seat/w/parser", commit: tip });
    // Every act listed is the record at its seq, as teamd log has it.
    const records = await h.records<{ seq: number; type: string; action: string }>("--seat", "w");
    const bySeq = new Map(records.map((r) => [r.seq, r]));
    expect(handoff.facts.acts.list.length).toBeGreaterThanOrEqual(3);
    for (const act of handoff.facts.acts.list) expect(bySeq.get(act.seq)).toMatchObject({ type: act.type, action: act.action });
    expect(handoff.facts.acts.list.map((a) => a.action)).toContain("file.write");
    const refusal = records.filter((r) => r.type === "refusal").at(-1);
    expect(handoff.facts.lastRefusal?.seq).toBe(refusal?.seq);
    // Nothing before the run's start is the run's.
    for (const act of handoff.facts.acts.list) expect(act.seq).toBeGreaterThan(handoff.run.startSeq);
  });

  it("its hypotheses are the seat's own notes, marked unverified, apart from the facts", async () => {
    expect(handoff.hypotheses.notes.map((n) => n.note)).toEqual([NOTE]);
    expect(handoff.hypotheses.evidence).toMatch(/not verified/);
    const text = await h.ok(["checkpoint", "show", "w"]);
    if (process.env.SHOW_HANDOFF) console.log(text);
    const facts = text.indexOf("FACTS");
    const hypotheses = text.indexOf("HYPOTHESES");
    expect(facts).toBeGreaterThan(0);
    expect(hypotheses).toBeGreaterThan(facts);
    expect(text.indexOf(NOTE)).toBeGreaterThan(hypotheses);
    expect(text).toContain("refs/heads/seat/w/parser");
  });

  it("a halted run is never restarted by its restart policy", async () => {
    await sleep(3_000);
    const status = JSON.parse(await h.ok(["status", "--json"])) as { seats: { seat: string }[] };
    expect(status.seats.map((s) => s.seat)).not.toContain("w");
  });

  it("the next run is handed the checkpoint read-only, and its start record names it", async () => {
    await h.ok(["start", "w"]);
    const last = await h.shim("w", "checkpoint", "--last", "--json");
    expect(last.code, last.stderr).toBe(0);
    expect(JSON.parse(last.stdout)).toEqual(handoff);
    const file = await h.sh("w", 'cat "$TEAMD_HANDOFF"; echo tamper > "$TEAMD_HANDOFF" && echo WROTE');
    expect(file.stdout).not.toContain("WROTE");
    expect(JSON.parse(file.stdout.split("\n")[0] ?? "")).toEqual(handoff);
    const starts = (await h.records<{ type: string; fields?: Record<string, string> }>("--seat", "w")).filter((r) => r.type === "seat_start");
    expect(starts.at(-1)?.fields?.handoff_seq).toBe(String(handoff.seq));
    // Only this seat's handoff is in TEAMD_HOME's handoffs, and a second halt leaves one newer.
    expect(existsSync(join(h.home, "handoffs/proj/w"))).toBe(true);
    await h.ok(["halt", "w"]);
    const next = JSON.parse(await h.ok(["checkpoint", "show", "w@proj", "--json"])) as HandoffJson;
    expect(next.seq).toBeGreaterThan(handoff.seq);
    expect(next.hypotheses.notes).toEqual([]);
  }, 120_000);

  it("a seat never halted has none, and says so", async () => {
    const none = JSON.parse(await h.ok(["checkpoint", "show", "nobody", "--json"])) as { checkpoint: unknown };
    expect(none.checkpoint).toBeNull();
  });
});
