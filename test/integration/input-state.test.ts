import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureSeatUser } from "../support/seat-user.js";
import { leadsWriterTeamFile } from "../support/team-file.js";
import { initTeam, type LogRecord, type TeamdHarness } from "../support/teamd-harness.js";

/**
 * §15's exact input state, recomputed by a second implementation (issue 25: "two
 * implementations agree on what the same act is"): through a real daemon, real seats, the real
 * hub and ledger, each gated act's intent carries a tree hash, a team-file hash and a lease-set
 * hash, and this test derives all three again from the hub (git) and the ledger's records
 * (`teamd log --json`) alone, by the definitions in src/ledger/input-state.ts — never by
 * calling teamd's code. The capability and its scope, and before/after identities, too.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const TEAM_FILE = leadsWriterTeamFile();

type Rec = LogRecord & {
  target?: string;
  input?: { tree: string; teamFile: string; leaseSet: string };
  capabilityUsed?: { capability: string; scope: Record<string, unknown> };
  before?: Record<string, unknown>;
  detail?: { teamFileHash?: string };
};

describe.runIf(process.platform === "linux")("the exact input state of an act, recomputed from the hub and the ledger (§15)", () => {
  let h: TeamdHarness;

  beforeAll(async () => {
    h = await initTeam("teamd-input-", { files: { "README.md": "hello\n", "src/a.txt": "a\n" } });
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE);
    await h.ok(["apply", "--yes"]);
    await h.ok(["start", "--team", "proj"]);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("a file write's and a push's tree, team-file and lease-set hashes agree with the ones recomputed", async () => {
    // Leases on record: two issued, one revoked — the set is the one still standing.
    const issue = async () => {
      const r = await h.shim("w", "lease", "issue", "r", "write", "path=src/", "--ttl", "1h", "--json");
      expect(r.code, r.stderr).toBe(0);
      return (JSON.parse(r.stdout) as { leaseId: string }).leaseId;
    };
    const kept = await issue();
    const gone = await issue();
    expect((await h.shim("w", "lease", "revoke", gone)).code).toBe(0);
    // Two file writes on one branch (the second has a before), and a push from inside the seat.
    for (const text of ["one", "two"]) {
      const w = await h.inSeat("w", `printf '${text}\\n' | teamd-shim file write src/w.txt --branch fw -m 'w: ${text}' --json`);
      expect(w.code, w.stdout + w.stderr).toBe(0);
    }
    const pushed = await h.inSeat(
      "w",
      "git checkout -q -b pushed && echo p > src/p.txt && git add src/p.txt && git commit -qm p && git push -q teamd pushed 2>&1",
    );
    expect(pushed.code, pushed.stdout + pushed.stderr).toBe(0);

    const records = await h.records<Rec>();
    const intents = records.filter((r) => r.type === "intent" && (r.action === "file.write" || r.action === "git.push"));
    expect(intents.map((r) => r.action)).toEqual(["file.write", "file.write", "git.push"]);
    for (const intent of intents) {
      const at = intent.seq;
      // Team-file hash: the policy record in force when the act was recorded.
      const policy = records.filter((r) => r.type === "policy" && r.seq < at).at(-1);
      expect(intent.input?.teamFile, `intent ${at}`).toBe(policy?.detail?.teamFileHash);
      // Lease-set hash: the team's lease records before it, less those a revocation before it names, sorted, "\n" after each.
      const leaseIds = records.filter((r) => r.type === "lease" && r.seq < at).map((r) => String(r.target).replace(/^lease:/, ""));
      const revoked = new Set(records.filter((r) => r.type === "revocation" && r.seq < at).map((r) => String(r.target).replace(/^lease:/, "")));
      const standing = leaseIds.filter((id) => !revoked.has(id)).sort();
      expect(standing).toEqual([kept]);
      const leaseSet = createHash("sha256")
        .update(standing.map((id) => `${id}\n`).join(""))
        .digest("hex");
      expect(intent.input?.leaseSet, `intent ${at}`).toBe(leaseSet);
      // Tree hash: the tree of the hub's state the act was decided on — its ref's tip before it,
      // or for a file write on a new branch the trunk's tip it is written on.
      const before = intent.before?.gitCommit as string | undefined;
      const base = before ?? (intent.action === "file.write" ? h.hubGit("rev-parse", "refs/heads/main") : undefined);
      expect(intent.input?.tree, `intent ${at}`).toBe(base === undefined ? "" : h.hubGit("rev-parse", `${base}^{tree}`));
      // The capability and the scope of the authority that covered it.
      expect(intent.capabilityUsed, `intent ${at}`).toMatchObject({ capability: "write", scope: { path: ["src"] } });
    }
    // The second write is on the branch the first made: its before is the first's commit.
    expect(intents[1]?.before?.gitCommit).toBe(h.hubGit("rev-parse", "refs/heads/seat/w/fw~1"));
    expect(gone).not.toBe(kept);
  }, 120_000);
});
