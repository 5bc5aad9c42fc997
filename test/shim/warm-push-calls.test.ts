import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ShimService } from "../../src/gen/teamd/v1/shim_pb.js";
import { createRpcServer } from "../../src/rpc/index.js";
import { warmPushCalls } from "../../shim/git-remote.js";
import { withUnused } from "../rpc/unused-methods.js";
import { makeTempHome } from "../support/programs.js";
import { holdingRelay } from "./holding-relay.js";

/**
 * The calls the build makes once so that the lazy part's code cache holds a push's client code
 * compiled (shim/git-remote.ts warmPushCalls, scripts/build-shim.ts): they must be the calls a
 * push makes, in the way it makes them — the listing and whoAmI written before the daemon has said
 * a word, then a push of a header and a pack file's end — or the cache holds other code than a
 * seat's push runs. A stub daemon on a real socket notes each; the build itself fails where the
 * loopback server it runs them against is not asked each method.
 */
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("git-remote-teamd: the build's warm calls", () => {
  it("are a push's calls as the helper makes them", async () => {
    const home = await makeTempHome("teamd-warm-push-");
    cleanups.push(async () => home.remove());
    const daemonPath = join(home.dir, "daemon.sock");
    const relayPath = join(home.dir, "shim.sock");
    const calls: string[] = [];
    const server = createRpcServer({ socketPath: daemonPath, access: { mode: 0o600 }, channel: "seat:test" });
    server.addService(
      ShimService,
      withUnused({
        async listRefs(request: { forPush: boolean }) {
          calls.push(`listRefs ${request.forPush}`);
          return { refs: [], head: "refs/heads/main" };
        },
        async whoAmI() {
          calls.push("whoAmI");
          return { seat: "w1", team: "t" };
        },
        async push(parts: AsyncIterable<{ part: { case: string; value: unknown } }>) {
          const seen: string[] = [];
          for await (const p of parts) seen.push(p.part.case === "header" ? `header ${(p.part.value as { packFile: string }).packFile}` : p.part.case);
          calls.push(`push ${seen.join(", ")}`);
          return { results: [{ ref: "refs/heads/warm", hubRef: "refs/heads/seat/w1/warm", ok: true }] };
        },
      }) as never,
    );
    await server.listen();
    cleanups.push(async () => server.close(0));
    const relay = await holdingRelay(relayPath, daemonPath, () => calls.length >= 2);
    cleanups.push(relay.close);
    await warmPushCalls(relayPath);
    expect(relay.askedWhileHeld()).toBe(true);
    expect(calls.slice(0, 2).sort()).toEqual(["listRefs true", "whoAmI"]);
    expect(calls[2]).toBe("push header .teamd-pack-warm.pack, written");
  });
});
