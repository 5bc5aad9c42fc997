import { spawn } from "node:child_process";
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { ShimService } from "../../src/gen/teamd/v1/shim_pb.js";
import { packFileName } from "../../src/effects/pack-file-name.js";
import { createRpcServer } from "../../src/rpc/index.js";
import { commandLines } from "../../shim/git-remote.js";
import { withUnused } from "../rpc/unused-methods.js";
import { makeTempHome, ROOT } from "../support/programs.js";
import { holdingRelay } from "./holding-relay.js";

/**
 * The remote helper of a push known as it starts (its front started the pack on the push's guess:
 * shim/git-remote.ts) asks the daemon for the push's listing and for who it is at once, while git
 * and the helper trade capabilities and options, and answers git's `list for-push` with that one
 * listing. The real shim bundle, over a real socket to a stub daemon that notes each call; git's
 * side of the helper protocol is played on its stdin and stdout.
 */
const SHIM_BUNDLE = join(ROOT, "dist/shim-bundle/teamd-shim.cjs");
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A stub daemon on a real socket that notes each call of the push's listing and whoAmI. */
async function stubDaemon(socketPath: string, calls: string[], held: string): Promise<void> {
  const server = createRpcServer({ socketPath, access: { mode: 0o600 }, channel: "seat:test" });
  server.addService(
    ShimService,
    withUnused({
      async listRefs(request: { forPush: boolean }) {
        calls.push(`listRefs ${request.forPush}`);
        return { refs: [{ name: "refs/heads/main", oid: held }], head: "refs/heads/main" };
      },
      async whoAmI() {
        calls.push("whoAmI");
        return { seat: "w1", team: "t" };
      },
    }) as never,
  );
  await server.listen();
  cleanups.push(async () => server.close(0));
}

/**
 * The real shim run as git runs the helper of a push whose front started its pack, on `socketPath`:
 * the front's pack file (its bytes are not read here) and its account — the pack's pid, the
 * revisions it was given, and its exit. Its stdin and stdout are git's side of the protocol.
 */
function startHelper(dir: string, socketPath: string, tip: string, held: string) {
  const repo = join(dir, "repo");
  const tmp = join(dir, "tmp");
  mkdirSync(tmp);
  execFileSync("git", ["init", "-q", repo]);
  const name = packFileName("0123abcd-4567-89ab-cdef-0123456789ab");
  writeFileSync(join(tmp, name), "PACK");
  const helper = spawn(process.execPath, [SHIM_BUNDLE, "--git-remote-helper", "teamd", "teamd::seat"], {
    env: { PATH: process.env.PATH ?? "", HOME: dir, GIT_DIR: join(repo, ".git"), TEAMD_SOCKET: socketPath, TEAMD_TMP: tmp, TEAMD_EARLY_PACK: name },
    stdio: ["pipe", "pipe", "pipe", "ignore", "pipe"],
  });
  const exited = new Promise<number | null>((resolve) => helper.on("exit", resolve));
  cleanups.push(async () => {
    helper.kill("SIGKILL");
    await exited;
  });
  const [stdin, stdout, errors, , account] = helper.stdio as unknown as [Writable, Readable, Readable, null, Writable];
  const output = { stderr: "" };
  errors.setEncoding("utf8").on("data", (chunk: string) => (output.stderr += chunk));
  account.end(`pid 1\n${tip}\n--not\n${held}\n.\nexit 0\n`);
  // The helper's answers, a line at a time, read as it reads git's commands.
  const nextLine = commandLines(stdout);
  const read = async () => (await nextLine()) ?? "(the helper's output ended)";
  return { stdin, read, exited, output };
}

async function until(done: () => boolean, what: () => string): Promise<void> {
  for (let waited = 0; !done(); waited += 10) {
    if (waited > 10_000) throw new Error(what());
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe.runIf(process.platform === "linux")("git-remote-teamd: a push's listing", () => {
  it("is asked with whoAmI as the helper starts, before git lists, and asked once", async () => {
    const home = await makeTempHome("teamd-push-listing-");
    cleanups.push(async () => home.remove());
    const socketPath = join(home.dir, "shim.sock");
    const calls: string[] = [];
    const tip = "1".repeat(40);
    const held = "2".repeat(40);
    await stubDaemon(socketPath, calls, held);
    const { stdin, read, exited, output } = startHelper(home.dir, socketPath, tip, held);

    stdin.write("capabilities\n");
    const capabilities: string[] = [];
    for (let line = await read(); line !== ""; line = await read()) capabilities.push(line);
    expect(capabilities).toEqual(["fetch", "push", "option"]);
    // git has not listed yet: the daemon has been asked already.
    await until(
      () => calls.includes("listRefs true") && calls.includes("whoAmI"),
      () => `the daemon was asked only ${JSON.stringify(calls)} (${output.stderr})`,
    );
    stdin.write("option verbosity 1\nlist for-push\n");
    expect(await read()).toBe("ok");
    const listed: string[] = [];
    for (let line = await read(); line !== ""; line = await read()) listed.push(line);
    expect(listed).toEqual([`${held} refs/heads/main`, "@refs/heads/main HEAD"]);
    // The one listing answered git: none asked again.
    expect(calls.filter((c) => c.startsWith("listRefs"))).toEqual(["listRefs true"]);
    stdin.end("\n");
    expect(await exited).toBe(0);
  }, 30_000);

  it("is written by the shim's front as it connects, before the daemon has said a word", async () => {
    // Between the helper and the stub daemon, a relay that holds the daemon's bytes until both
    // calls have reached it: a client that waits for the daemon's SETTINGS before its first call
    // (as the helper's lazily loaded client does) asks nothing until then; the front's bytes
    // carry both calls with the connection's start.
    const home = await makeTempHome("teamd-push-calls-front-");
    cleanups.push(async () => home.remove());
    const daemonPath = join(home.dir, "daemon.sock");
    const relayPath = join(home.dir, "shim.sock");
    const calls: string[] = [];
    const tip = "1".repeat(40);
    const held = "2".repeat(40);
    await stubDaemon(daemonPath, calls, held);
    const relay = await holdingRelay(relayPath, daemonPath, () => calls.length >= 2);
    cleanups.push(relay.close);
    const { stdin, read, exited, output } = startHelper(home.dir, relayPath, tip, held);
    stdin.write("capabilities\noption verbosity 1\nlist for-push\n");
    for (let line = await read(); line !== ""; line = await read());
    expect(await read()).toBe("ok");
    const listed: string[] = [];
    for (let line = await read(); line !== ""; line = await read()) listed.push(line);
    expect(listed).toEqual([`${held} refs/heads/main`, "@refs/heads/main HEAD"]);
    expect(relay.askedWhileHeld(), `calls ${JSON.stringify(calls)} (${output.stderr})`).toBe(true);
    expect(calls.sort()).toEqual(["listRefs true", "whoAmI"]);
    stdin.end("\n");
    expect(await exited).toBe(0);
  }, 30_000);
});
