import { afterEach, describe, expect, it } from "vitest";
import { join } from "node:path";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { ControlService, type StatusResponseSchema } from "../../src/gen/teamd/v1/control_pb.js";
import { createRpcServer, PROTOCOL_VERSION, TEAMD_VERSION } from "../../src/rpc/index.js";
import { makeTempHome, run, TEAMD } from "../support/programs.js";

/**
 * `teamd status` takes the unseen notices and the last selftest's standing from the daemon's
 * answer (StatusResponse.notices_unseen, .selftest), so the owner's command loads no SQLite and
 * runs no bubblewrap (issue 26); from a daemon too old to answer them it reads both itself.
 * Served here by a real control socket whose answer differs from what the home holds (no ledger,
 * no selftest record), so a client reading the home instead would show otherwise.
 */
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function daemonAnswering(reply: MessageInitShape<typeof StatusResponseSchema>): Promise<{ home: string; socket: string }> {
  const home = await makeTempHome("teamd-status-counts-");
  const socket = join(home.dir, "control.sock");
  const server = createRpcServer({ socketPath: socket, access: { mode: 0o600 }, channel: "control", limits: "control" });
  const impl: Record<string, unknown> = {};
  for (const method of ControlService.methods) impl[method.localName] = () => Promise.reject(new Error(`${method.name} is not used by this test`));
  impl.status = async () => reply;
  server.addService(ControlService, impl as never);
  await server.listen();
  cleanups.push(async () => {
    await server.close(0);
    await home.remove();
  });
  return { home: home.dir, socket };
}

const BASE = { daemon: { protocol: PROTOCOL_VERSION, program: TEAMD_VERSION }, daemonInstance: "i", pid: 1, mode: "user", home: "/h" };

interface StatusJson {
  notices: { unseen: number | null };
  selftest: { standing: string; at?: string; reason?: string };
}

async function status(d: { home: string; socket: string }, json: boolean) {
  const r = await run(TEAMD, ["status", ...(json ? ["--json"] : []), "--socket", d.socket], { TEAMD_HOME: join(d.home, "home"), HOME: d.home });
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  return r.stdout;
}

describe("teamd status: the daemon counts the notices and reads the selftest", () => {
  it("shows the daemon's count and standing, not the home's", async () => {
    const d = await daemonAnswering({ ...BASE, noticesUnseen: 7, selftest: { standing: "passed", at: "2026-12-05T00:00:00.000Z" } });
    const json = JSON.parse(await status(d, true)) as StatusJson;
    expect(json.notices.unseen).toBe(7);
    expect(json.selftest).toEqual({ standing: "passed", at: "2026-12-05T00:00:00.000Z" });
    const text = await status(d, false);
    expect(text).toContain("notices: 7 not yet seen (teamd notices)");
    expect(text).toContain("containment: proven on this host by teamd selftest");
  });

  it("a daemon with no ledger to count in: no count, and an unproven standing keeps its reason", async () => {
    const d = await daemonAnswering({ ...BASE, selftest: { standing: "unproven", reason: "containment is unproven on this host: a reason" } });
    const json = JSON.parse(await status(d, true)) as StatusJson;
    expect(json.notices.unseen).toBeNull();
    expect(json.selftest).toEqual({ standing: "unproven", reason: "containment is unproven on this host: a reason" });
    expect(await status(d, false)).toContain("notices: no ledger");
  });

  it("from a daemon that answers neither (an older one): both read from the home, as before", async () => {
    const d = await daemonAnswering({ ...BASE });
    const json = JSON.parse(await status(d, true)) as StatusJson;
    expect(json.notices.unseen).toBeNull();
    expect(json.selftest.standing).toBe("unproven");
    expect(json.selftest.reason).toContain("no selftest has run on this host");
  });
});
