import { afterEach, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Flag, FlagRead } from "../../../src/ledger/index.js";
import { watchStopFlags, type StopWatch } from "../../../daemon/server/stop-watch.js";

/**
 * The daemon's watch on the flags folder (daemon/server/stop-watch.ts): a machine-wide stop flag it
 * did not raise is acted on once, after the grace it leaves to the owner's own request; a
 * flag the daemon handled in that request, a flag present at start, and a team or
 * revocation flag are left alone. The folder is real; the flags' verification is the
 * ledger's (tested in test/ledger/flags.test.ts), so `read` here answers what a file stands for.
 */
const flag = (id: string, kind: Flag["kind"] = "stop", scope: Flag["scope"] = "machine"): Flag =>
  ({ id, kind, scope, team: "", subject: undefined, bytes: new Uint8Array(), act: undefined }) as unknown as Flag;

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what}: not in time`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("the flags watch", () => {
  let dir: string;
  let watch: StopWatch | undefined;
  afterEach(() => {
    watch?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const start = (present: Flag[]) => {
    dir = mkdtempSync(join(tmpdir(), "teamd-stopwatch-"));
    const flags: Flag[] = [...present];
    const acted: string[] = [];
    const logged: string[] = [];
    watch = watchStopFlags({
      flagsDir: dir,
      read: (): FlagRead => ({ flags: [...flags], invalid: [] }),
      onStop: async (f) => void acted.push(f.id),
      log: (line) => logged.push(line),
      now: () => Date.now(),
      intervalMs: 5,
      graceMs: 30,
    });
    const add = (f: Flag) => {
      flags.push(f);
      writeFileSync(join(dir, `${f.kind}-${f.id}.flag`), "x");
    };
    return { acted, logged, add };
  };

  it("acts once on a new machine-wide stop, after its grace, and logs it", async () => {
    const { acted, logged, add } = start([]);
    add(flag("new-stop"));
    await until(() => acted.length > 0, "acted");
    await new Promise((r) => setTimeout(r, 100));
    expect(acted).toEqual(["new-stop"]);
    expect(logged.join("\n")).toMatch(/a machine-wide stop flag appeared \(new-stop\)/);
  });

  it("leaves a flag the daemon handled in the owner's request, flags present at start, team stops and revocations", async () => {
    const { acted, add } = start([flag("at-start")]);
    add(flag("asked"));
    watch?.handled("asked");
    add(flag("team-stop", "stop", "team"));
    add(flag("a-revocation", "revocation", undefined));
    add(flag("control"));
    // The control flag proves the watch ran past the others.
    await until(() => acted.includes("control"), "the control flag acted on");
    await new Promise((r) => setTimeout(r, 100));
    expect(acted).toEqual(["control"]);
  });
});
