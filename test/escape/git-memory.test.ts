import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { seatGitLimits } from "../../src/effects/contained-git.js";
import { PackRejected, receivePack } from "../../src/effects/git-receive.js";
import { BOMB_SCRIPT } from "../support/pack-bomb.js";

/**
 * Proves (docs/enforcement.md, "The daemon never works for a seat unbounded"): the git the
 * daemon runs on a seat's pushed objects is held to the seat's memory limit even where the
 * seat's cgroups do not carry memory — a host whose cgroups have no memory controller gives a
 * seat pids and cpu ones, and the seat itself falls back to RLIMIT_DATA. Found by an attack
 * (round seven): with only the seat's cgroups, a delta bomb's 48 MiB blob was indexed for a seat
 * limited to 32 MiB. The bomb is the seat's to send: a valid pack, within teamd's pack bounds
 * (64 MiB an object), a few KiB on the wire. As root (a cgroup is made for the case).
 */
const MiB = 1024 * 1024;
const RESULT = 48 * MiB;
const asRoot = process.getuid?.() === 0;

describe.runIf(process.platform === "linux")("escape: contained git holds a seat's memory limit", () => {
  let dir: string;
  let hub: string;
  let bomb: Buffer;
  const cgroups: string[] = [];
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "teamd-git-memory-"));
    hub = join(dir, "hub.git");
    execFileSync("git", ["init", "-q", "--bare", hub]);
    writeFileSync(join(dir, "bomb.cjs"), BOMB_SCRIPT);
    bomb = execFileSync(process.execPath, [join(dir, "bomb.cjs"), "pack", String(RESULT)], { maxBuffer: 64 * MiB });
    mkdirSync(join(dir, "q"));
  });
  afterAll(() => {
    for (const leaf of cgroups) rmdirSync(leaf);
    rmSync(dir, { recursive: true, force: true });
  });

  const receive = async (limits: ReturnType<typeof seatGitLimits>) => {
    try {
      const q = await receivePack(hub, bomb, { quarantineRoot: join(dir, "q"), maxBytes: 64 * MiB, limits, timeoutMs: 60_000 });
      await q.dispose();
      return "landed";
    } catch (error) {
      if (error instanceof PackRejected) return `rejected: ${error.reason}`;
      throw error;
    }
  };

  it("control: the bomb is a valid pack, and lands for a seat with room for it", async () => {
    expect(await receive(seatGitLimits([], 1024 * MiB))).toBe("landed");
  }, 120_000);

  it("a seat limited to 32 MiB without cgroups: its limit as RLIMIT_DATA stops the blob", async () => {
    expect(await receive(seatGitLimits([], 32 * MiB))).toMatch(/^rejected: .*(memory|malloc)/i);
  }, 120_000);

  it.runIf(asRoot && existsSync("/sys/fs/cgroup/pids/cgroup.procs"))(
    "a seat limited to 32 MiB whose cgroups carry no memory (pids only): still stopped",
    async () => {
      const leaf = join("/sys/fs/cgroup/pids", `teamd-git-memory-${process.pid}`);
      mkdirSync(leaf);
      cgroups.push(leaf);
      writeFileSync(join(leaf, "pids.max"), "64");
      const limits = seatGitLimits([join(leaf, "cgroup.procs")], 32 * MiB);
      expect(limits).toMatchObject({ memoryBytes: 32 * MiB });
      expect(await receive(limits)).toMatch(/^rejected: .*(memory|malloc)/i);
      expect(readFileSync(join(leaf, "cgroup.procs"), "utf8")).toBe("");
    },
    120_000,
  );
});
