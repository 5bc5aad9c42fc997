import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mergeInto, summarizeChange } from "../../src/effects/git-merge.js";
import { migrateAndUpdate, readRef, RefMoved } from "../../src/effects/git-receive.js";
import { GitError } from "../../src/effects/git.js";
import { explainRefFailure, RefBusy, RefConflict, refUpdateFailure, retryRefLock } from "../../src/effects/ref-lock.js";
import { sh } from "../support/git-cli.js";

/**
 * A ref update that loses a lock race (issue 20, "Unknown means unknown"): the lock of the ref
 * is held by another update — here a `<ref>.lock` file the test makes, which is what any
 * concurrent git leaves while it updates — so git refuses without moving the ref. The update
 * is tried again and lands when the lock goes; held through every attempt it is RefBusy, a
 * refusal, never the bare git error an effect would record as unknown.
 */
let root: string;
let counter = 0;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "teamd-ref-lock-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A bare hub with main at one commit and seat/w1/fix at a second on top; the commits. */
function makeHub(): { hub: string; start: string; fix: string } {
  counter += 1;
  const dir = join(root, `case-${counter}`);
  mkdirSync(dir);
  const hub = join(dir, "hub.git");
  const work = join(dir, "work");
  sh(dir, ["init", "-q", "--bare", "-b", "main", hub]);
  sh(dir, ["init", "-q", "-b", "main", work]);
  writeFileSync(join(work, "a.txt"), "a\n");
  sh(work, ["add", "a.txt"]);
  sh(work, ["commit", "-q", "-m", "start"]);
  const start = sh(work, ["rev-parse", "HEAD"]);
  writeFileSync(join(work, "b.txt"), "b\n");
  sh(work, ["add", "b.txt"]);
  sh(work, ["commit", "-q", "-m", "fix"]);
  const fix = sh(work, ["rev-parse", "HEAD"]);
  sh(work, ["push", "-q", hub, `${start}:refs/heads/main`, `${fix}:refs/heads/seat/w1/fix`]);
  return { hub, start, fix };
}

const lockOf = (hub: string, ref: string) => join(hub, `${ref}.lock`);

describe("a push's ref move against a held lock", () => {
  it("is refused as RefBusy after its bounded attempts, the ref where it was", async () => {
    const { hub, start, fix } = makeHub();
    writeFileSync(lockOf(hub, "refs/heads/seat/w1/fix"), "");
    const attempt = retryRefLock("refs/heads/seat/w1/fix", () => migrateAndUpdate(hub, undefined, "refs/heads/seat/w1/fix", start, fix), 3, 5);
    await expect(attempt).rejects.toBeInstanceOf(RefBusy);
    expect(await readRef(hub, "refs/heads/seat/w1/fix")).toBe(fix);
  });

  it("control: without the retry, the same race is git's bare error (what an effect records as unknown)", async () => {
    const { hub, start, fix } = makeHub();
    writeFileSync(lockOf(hub, "refs/heads/seat/w1/fix"), "");
    const error = await migrateAndUpdate(hub, undefined, "refs/heads/seat/w1/fix", start, fix).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(RefBusy);
    expect(error).not.toBeInstanceOf(RefMoved);
  });

  it("lands once the lock is released within the attempts", async () => {
    const { hub, start, fix } = makeHub();
    const lock = lockOf(hub, "refs/heads/seat/w1/fix");
    writeFileSync(lock, "");
    setTimeout(() => rmSync(lock), 40);
    await retryRefLock("refs/heads/seat/w1/fix", () => migrateAndUpdate(hub, undefined, "refs/heads/seat/w1/fix", start, fix), 6, 20);
    expect(await readRef(hub, "refs/heads/seat/w1/fix")).toBe(start);
  });

  it("a ref that moved meanwhile is still RefMoved, not retried into place", async () => {
    const { hub, start, fix } = makeHub();
    await expect(
      retryRefLock("refs/heads/seat/w1/fix", () => migrateAndUpdate(hub, undefined, "refs/heads/seat/w1/fix", fix, start), 3, 5),
    ).rejects.toBeInstanceOf(RefMoved);
    expect(await readRef(hub, "refs/heads/seat/w1/fix")).toBe(fix);
  });

  it("a new ref beside a folder of refs of its name is RefConflict at once", async () => {
    const { hub, start } = makeHub();
    await expect(retryRefLock("refs/heads/seat/w1", () => migrateAndUpdate(hub, undefined, "refs/heads/seat/w1", start, ""), 3, 5)).rejects.toBeInstanceOf(
      RefConflict,
    );
    expect(await readRef(hub, "refs/heads/seat/w1")).toBeUndefined();
  });
});

/**
 * `x` and `x/y` made at once (found by an outside attack racing a seat's own pushes): git says
 * "cannot be made beside" in several ways depending on where the other update is, and one that
 * was missed became an unknown outcome — a blocked branch and a notice — for a ref that never moved.
 */
describe("a ref made beside another made at the same moment", () => {
  it.each([
    ["exists; cannot create", "fatal: cannot lock ref 'refs/heads/x/y': 'refs/heads/x' exists; cannot create 'refs/heads/x/y'"],
    ["a non-empty folder in the way", "error: there is a non-empty directory './refs/heads/x' blocking reference 'refs/heads/x'"],
    ["a lock under a ref file", "fatal: Unable to create '/hub/refs/heads/x/y.lock': Not a directory"],
    ["no folder for it", "fatal: cannot lock ref 'refs/heads/x/y': unable to create directory for /hub/refs/heads/x/y"],
  ])("git's words for it — %s — are a conflict", (_what, stderr) => {
    expect(refUpdateFailure(new GitError(["update-ref"], 128, stderr))?.kind).toBe("conflict");
  });

  it("whatever git's words, a ref standing beside it now makes the failure a RefConflict; without one, git's own error", async () => {
    const { hub } = makeHub();
    const vague = new GitError(["update-ref"], 128, "fatal: update_ref failed for ref 'refs/heads/seat/w1': couldn't set 'refs/heads/seat/w1'");
    expect(await explainRefFailure(hub, "refs/heads/seat/w1", vague)).toBeInstanceOf(RefConflict);
    // Control: the same words for a ref nothing stands beside are not explained away.
    expect(await explainRefFailure(hub, "refs/heads/seat/w2", vague)).toBe(vague);
  });

  it("a hundred pairs of x and x/y made at once on a real hub: each fails only as a refusal, never git's bare error", async () => {
    const { hub, start } = makeHub();
    const outcomes = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        [`refs/heads/seat/w1/r${i}`, `refs/heads/seat/w1/r${i}/y`].map((ref) =>
          retryRefLock(ref, () => migrateAndUpdate(hub, undefined, ref, start, ""), 3, 5).then(
            () => "landed",
            (error: unknown) => (error instanceof RefConflict || error instanceof RefMoved || error instanceof RefBusy ? "refused" : `bare: ${String(error)}`),
          ),
        ),
      ).flat(),
    );
    expect(outcomes.filter((o) => o.startsWith("bare"))).toEqual([]);
    // Control: the race is real — both sides land in some pairs' place, and some are refused.
    expect(outcomes.filter((o) => o === "landed").length).toBeGreaterThanOrEqual(100);
    expect(outcomes.filter((o) => o === "refused").length).toBeGreaterThan(0);
  }, 60_000);
});

describe("a merge's update-ref against a held lock", () => {
  it("is refused as RefBusy when the trunk's lock is held through every attempt; neither ref moves", async () => {
    const { hub, start, fix } = makeHub();
    const summary = await summarizeChange(hub, "refs/heads/main", "refs/heads/seat/w1/fix");
    writeFileSync(lockOf(hub, "refs/heads/main"), "");
    await expect(mergeInto(hub, summary, { name: "m", email: "m@x.invalid" }, "merge")).rejects.toBeInstanceOf(RefBusy);
    expect(await readRef(hub, "refs/heads/main")).toBe(start);
    expect(await readRef(hub, "refs/heads/seat/w1/fix")).toBe(fix);
  });

  it("is refused as RefBusy when the branch's lock is held (a push to it in flight)", async () => {
    const { hub, start } = makeHub();
    const summary = await summarizeChange(hub, "refs/heads/main", "refs/heads/seat/w1/fix");
    writeFileSync(lockOf(hub, "refs/heads/seat/w1/fix"), "");
    await expect(mergeInto(hub, summary, { name: "m", email: "m@x.invalid" }, "merge")).rejects.toBeInstanceOf(RefBusy);
    expect(await readRef(hub, "refs/heads/main")).toBe(start);
  });

  it("lands once the lock is released within the attempts", async () => {
    const { hub, fix } = makeHub();
    const summary = await summarizeChange(hub, "refs/heads/main", "refs/heads/seat/w1/fix");
    const lock = lockOf(hub, "refs/heads/main");
    writeFileSync(lock, "");
    setTimeout(() => rmSync(lock), 60);
    const merged = await mergeInto(hub, summary, { name: "m", email: "m@x.invalid" }, "merge");
    expect(await readRef(hub, "refs/heads/main")).toBe(merged);
    expect(sh(hub, ["rev-parse", `${merged}^2`])).toBe(fix);
  });
});
