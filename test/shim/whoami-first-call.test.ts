import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { ShimService } from "../../src/gen/teamd/v1/shim_pb.js";
import { createRpcServer } from "../../src/rpc/index.js";
import { withUnused } from "../rpc/unused-methods.js";
import { makeTempHome, ROOT } from "../support/programs.js";
import { holdingRelay } from "./holding-relay.js";

const run = promisify(execFile);

/**
 * `teamd-shim whoami`'s call is written by the shim's front as it connects, before the act's code
 * loads (shim/main.ts, shim/first-calls.ts): the real shim bundle, through a relay that holds a
 * stub daemon's bytes until its call has come, and the daemon asked once.
 */
const SHIM_BUNDLE = join(ROOT, "dist/shim-bundle/teamd-shim.cjs");
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("teamd-shim whoami", () => {
  it("is asked of the daemon before the daemon has said a word, and once", async () => {
    const home = await makeTempHome("teamd-whoami-first-");
    cleanups.push(async () => home.remove());
    const daemonPath = join(home.dir, "daemon.sock");
    const relayPath = join(home.dir, "shim.sock");
    const asked: string[] = [];
    const server = createRpcServer({ socketPath: daemonPath, access: { mode: 0o600 }, channel: "seat:test" });
    server.addService(
      ShimService,
      withUnused({
        async whoAmI() {
          asked.push("whoAmI");
          return { seat: "w1", team: "t", containment: "bwrap" };
        },
      }) as never,
    );
    await server.listen();
    cleanups.push(async () => server.close(0));
    const relay = await holdingRelay(relayPath, daemonPath, () => asked.length > 0);
    cleanups.push(relay.close);
    for (const json of [true, false]) {
      const { stdout } = await run(process.execPath, [SHIM_BUNDLE, "whoami", ...(json ? ["--json"] : [])], {
        env: { PATH: process.env.PATH ?? "", TEAMD_SOCKET: relayPath },
        timeout: 20_000,
      });
      if (json) expect(JSON.parse(stdout)).toMatchObject({ seat: "w1", team: "t", containment: "bwrap" });
      else expect(stdout).toMatch(/^seat w1 of team t /);
    }
    expect(relay.askedWhileHeld()).toBe(true);
    expect(asked).toEqual(["whoAmI", "whoAmI"]);
  }, 30_000);
});
