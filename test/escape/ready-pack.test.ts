import { readdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureSeatUser } from "../support/seat-user.js";
import { srcWriterTeamFile } from "../support/team-file.js";
import { initTeam, type TeamdHarness } from "../support/teamd-harness.js";

/**
 * Proves (docs/enforcement.md, "The daemon never works for a seat unbounded"): the pack-objects
 * the daemon starts when a seat lists refs for a fetch (issue 26: the fetch's contained git
 * starts while git decides what to ask) is one a seat at most, however fast the seat lists, and
 * is gone once unfed past its idle time — a seat cannot turn listings into a crowd of the
 * daemon's processes. Counted on the host by their command lines (git, pack-objects, the hub).
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

describe.runIf(process.platform === "linux")("escape: a seat's listings start at most one waiting pack", () => {
  let h: TeamdHarness;
  let hub: string;

  /** The daemon's pack-objects processes on this hub now (git itself, not the bash or bwrap that started it). */
  const readyPacks = (): number => {
    let n = 0;
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      let argv: string[];
      try {
        argv = readFileSync(`/proc/${entry}/cmdline`, "latin1").split("\0");
      } catch {
        continue;
      }
      if (argv[0] === "git" && argv.includes("pack-objects") && argv.includes(hub)) n++;
    }
    return n;
  };

  beforeAll(async () => {
    h = await initTeam("teamd-ready-pack-", { files: { "README.md": "hello\n" } });
    writeFileSync(join(h.repo, "teamd.yaml"), srcWriterTeamFile("w"));
    await h.ok(["apply", "--yes"]);
    await h.ok(["start", "--team", "proj"]);
    hub = realpathSync(h.hub);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("thirty listings in a row: one waiting pack at a time, none once the seat stops listing", async () => {
    let most = 0;
    let listing = true;
    const watch = (async () => {
      while (listing) {
        most = Math.max(most, readyPacks());
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    const listed = await h.sh("w", "i=0; while [ $i -lt 30 ]; do git ls-remote -q teamd >/dev/null || exit 9; i=$((i+1)); done");
    listing = false;
    await watch;
    expect(listed.code, listed.stderr).toBe(0);
    // Control: a listing does start one (else this proves nothing), and never more than one.
    expect(most).toBe(1);
    // Unfed, it is killed after its idle time (2 s): gone well within this bound.
    let left = readyPacks();
    for (const deadline = Date.now() + 15_000; left > 0 && Date.now() < deadline; left = readyPacks()) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(left).toBe(0);
  }, 120_000);

  it("a fetch after its listing is served by it, and nothing waits after", async () => {
    const w = await h.shim("w", "file", "write", "src/b.txt", "--branch", "b", "-m", "b");
    expect(w.code, w.stderr).toBe(0);
    const fetched = await h.inSeat("w", "git fetch -q teamd && git for-each-ref --format='%(refname)' refs/remotes/ | grep -q '/b$'");
    expect(fetched.code, fetched.stdout + fetched.stderr).toBe(0);
    expect(readyPacks()).toBe(0);
  }, 60_000);
});
