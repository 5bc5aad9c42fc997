import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chownSync, lstatSync, mkdirSync, readdirSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { appliedTeam } from "../support/applied-team.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { sleeperTeamFile } from "../support/team-file.js";
import type { TeamdHarness } from "../support/teamd-harness.js";

/**
 * One host uid per seat in system mode (issue 21, finding 2), through a real daemon as root:
 * a seat keeps its uid across a stop and a daemon restart; a seat whose trees another uid
 * owns (made before seats had uids of their own) is moved to its uid at its next start, entry
 * by entry, without following the links the seat left in them (the control: the link's
 * target, a host file, keeps its owner).
 */
const asRoot = process.getuid?.() === 0;
const base = asRoot ? ensureSeatUser() : undefined;

describe.runIf(process.platform === "linux" && asRoot)("one uid per seat (system mode)", () => {
  let h: TeamdHarness;
  beforeAll(async () => {
    h = await appliedTeam("teamd-seat-uids-", sleeperTeamFile(["m", "n"]), undefined, { timeoutMs: 30_000 });
  }, 60_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  const uidOf = async (seat: string) =>
    (await h.json<{ seats: Array<{ seat: string; uid: number }> }>(["status", "--json"])).seats.find((s) => s.seat === seat)?.uid;

  it("keeps each seat's uid across a stop and a daemon restart, and never gives it to another seat", async () => {
    await h.ok(["start", "--team", "proj"]);
    const [m, n] = [await uidOf("m"), await uidOf("n")];
    expect(m).toBeDefined();
    expect(m).not.toBe(n);
    await h.ok(["stop", "--team", "proj"]);
    // A team's stop holds (§9, §15) until the owner resumes it.
    await h.ok(["resume", "--team", "proj"]);
    await h.stopDaemon();
    await h.startDaemon();
    await h.ok(["start", "--team", "proj"]);
    expect([await uidOf("m"), await uidOf("n")]).toEqual([m, n]);
    await h.ok(["stop", "--team", "proj"]);
    // A team's stop holds (§9, §15) until the owner resumes it.
    await h.ok(["resume", "--team", "proj"]);
  }, 90_000);

  it("never gives a seat of another TEAMD_HOME (another daemon of this machine) the same uid", async () => {
    const other = await appliedTeam("teamd-seat-uids-other-", sleeperTeamFile(["m"]), undefined, { timeoutMs: 30_000 });
    try {
      await h.ok(["start", "m@proj"]);
      await other.ok(["start", "m@proj"]);
      const mine = await uidOf("m");
      const theirs = (await other.json<{ seats: Array<{ seat: string; uid: number }> }>(["status", "--json"])).seats.find((s) => s.seat === "m")?.uid;
      expect(theirs).toBeDefined();
      expect(theirs).not.toBe(mine);
      await other.ok(["stop", "m@proj"]);
      await h.ok(["stop", "m@proj"]);
    } finally {
      await other.cleanup();
    }
  }, 90_000);

  it("moves a seat's trees to its uid at its next start, following none of its links", async () => {
    const dir = join(h.home, "seats/proj/m");
    // As an older teamd left it: every entry the shared seat user's, and a link the seat made to a host file.
    const victim = join(h.home, "..", `victim-${process.pid}`);
    writeFileSync(victim, "host file\n");
    symlinkSync(victim, join(dir, "home", "link-out"));
    mkdirSync(join(dir, "repo", "deep", "er"), { recursive: true });
    symlinkSync(victim, join(dir, "repo", "deep", "er", "link-out"));
    const rechown = (path: string) => {
      chownSync(path, base!.uid, base!.gid);
      if (lstatSync(path).isDirectory()) for (const entry of readdirSync(path)) rechownL(join(path, entry));
    };
    const rechownL = (path: string) => {
      const stats = lstatSync(path);
      if (stats.isSymbolicLink()) return;
      rechown(path);
    };
    rechown(join(dir, "repo"));
    rechown(join(dir, "home"));
    expect(statSync(join(dir, "repo")).uid).toBe(base!.uid);
    await h.ok(["start", "m@proj"]);
    const uid = await uidOf("m");
    for (const path of [join(dir, "repo"), join(dir, "repo", "deep", "er"), join(dir, "home")]) expect(statSync(path).uid, path).toBe(uid);
    expect(lstatSync(join(dir, "home", "link-out")).uid).toBe(uid);
    expect(lstatSync(join(dir, "repo", "deep", "er", "link-out")).uid).toBe(uid);
    // The links' target, outside the seat, is untouched.
    expect(statSync(victim).uid).toBe(0);
    // The seat works in its moved repository.
    expect((await h.sh("m", "touch moved && git status --porcelain")).stdout).toContain("moved");
    await h.ok(["stop", "m@proj"]);
    // Each tree on its own: a home another uid owns, beside a repository that is the seat's already.
    rechown(join(dir, "home"));
    await h.ok(["start", "m@proj"]);
    expect(statSync(join(dir, "home")).uid).toBe(uid);
    expect((await h.sh("m", "touch $HOME/w && echo wrote")).stdout).toContain("wrote");
    await h.ok(["stop", "m@proj"]);
  }, 90_000);
});
