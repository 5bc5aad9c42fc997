import { createHmac } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, statSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { TeamdHome } from "../../../daemon/host/home.js";
import { RunLog, markRunLost } from "../../../daemon/lifecycle/run-log.js";
import { listRuns, RUN_LOG_PART_BYTES, RUNS_KEPT, runLogDir, runOutput } from "../../../daemon/host/run-logs.js";
import { makeTempHome } from "../../support/programs.js";

/** A run's output on disk (issue 22): bounded by rotation and by runs kept, hashed whole, never followed through a link. */
describe("RunLog", () => {
  let tmp: { dir: string; remove(): Promise<void> };
  let home: TeamdHome;
  beforeEach(async () => {
    tmp = await makeTempHome("teamd-runlog-");
    home = { mode: "user", root: join(tmp.dir, "home"), runDir: join(tmp.dir, "home", "run"), controlSocket: "", seatSocketDir: "", ownerGid: undefined };
    mkdirSync(home.root, { recursive: true });
  });
  afterEach(async () => {
    await tmp.remove();
  });
  const start = (runId: string, startedAt = "2026-12-01T10:00:00.000Z") =>
    RunLog.open(home, { team: "proj", seat: "a", runId, startedAt, command: ["agent"], hmacKey: `key-of-${runId}` });

  it("keeps the output, says how the run ended, and hashes every byte it wrote", async () => {
    const log = await start("run-1");
    log.write(Buffer.from("hello\n"));
    log.write(Buffer.from("world\n"));
    expect((await listRuns(home, "proj", "a"))[0]).toMatchObject({ state: "running", bytes: 0 });
    const done = log.finish({ state: "ended", exitCode: 1, reason: "the seat's command ended (exit 1)" }, "2026-12-01T10:00:05.000Z");
    // Keyed by the run's own key: the digest alone does not give short output back (a bare sha-256 would).
    expect(done).toEqual({ bytes: 12, hmac: createHmac("sha256", "key-of-run-1").update("hello\nworld\n").digest("hex") });
    expect(String(await runOutput(home, "proj", "a", "run-1"))).toBe("hello\nworld\n");
    expect((await listRuns(home, "proj", "a"))[0]).toMatchObject({
      state: "ended",
      exitCode: 1,
      bytes: 12,
      dropped: 0,
      hmac: done.hmac,
      hmacKey: "key-of-run-1",
    });
    const dir = runLogDir(home, "proj", "a");
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, "run-1.log")).mode & 0o777).toBe(0o600);
  });

  it("rotates at a part's size: at most two parts are kept, and the meta says what was dropped", async () => {
    const log = await start("run-2");
    const chunk = Buffer.alloc(1024 * 1024, 0x61);
    for (let i = 0; i < 20; i += 1) log.write(chunk);
    log.write(Buffer.from("\nthe end\n"));
    const done = log.finish({ state: "stopped", stoppedBy: "owner", reason: "stopped by the owner" }, "2026-12-01T10:01:00.000Z");
    expect(done.bytes).toBe(20 * 1024 * 1024 + 9);
    const kept = await runOutput(home, "proj", "a", "run-2");
    expect(kept.length).toBeLessThanOrEqual(2 * RUN_LOG_PART_BYTES);
    expect(String(kept.subarray(-9))).toBe("\nthe end\n");
    const meta = (await listRuns(home, "proj", "a"))[0];
    expect(meta?.dropped).toBe(done.bytes - kept.length);
  });

  it("keeps RUNS_KEPT runs per seat, removing the oldest ended ones", async () => {
    for (let i = 0; i < RUNS_KEPT + 3; i += 1) {
      const log = await start(`r${String(i).padStart(3, "0")}`, `2026-12-01T10:${String(i).padStart(2, "0")}:00.000Z`);
      log.write(Buffer.from(`run ${i}\n`));
      log.finish({ state: "ended", exitCode: 0, reason: "ended" }, "2026-12-01T11:00:00.000Z");
    }
    const runs = await listRuns(home, "proj", "a");
    expect(runs).toHaveLength(RUNS_KEPT);
    expect(runs[0]?.runId).toBe("r003");
    expect(existsSync(join(runLogDir(home, "proj", "a"), "r000.log"))).toBe(false);
  });

  it("refuses to write through a link planted where a log goes (O_EXCL|O_NOFOLLOW)", async () => {
    const dir = runLogDir(home, "proj", "a");
    mkdirSync(dir, { recursive: true });
    const target = join(tmp.dir, "victim");
    symlinkSync(target, join(dir, "run-x.log"));
    await expect(start("run-x")).rejects.toThrow(/EEXIST|ELOOP/);
    expect(existsSync(target)).toBe(false);
  });

  it("a run the daemon did not see end is marked crashed, never left running", async () => {
    const log = await start("run-lost");
    log.write(Buffer.from("partial\n"));
    await markRunLost(home, "proj", "a", "run-lost", "2026-12-01T12:00:00.000Z");
    expect((await listRuns(home, "proj", "a"))[0]).toMatchObject({ state: "crashed", endedAt: "2026-12-01T12:00:00.000Z" });
    expect(readFileSync(join(runLogDir(home, "proj", "a"), "run-lost.log"), "utf8")).toBe("partial\n");
  });
});
