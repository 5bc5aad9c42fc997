import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startChild, stopChild } from "./lib/child.js";

/**
 * `npm run demo`: first light. A real daemon in a throw-away TEAMD_HOME with two seat
 * sockets; real teamd-shim processes ask who they are; an owner call on a seat socket is
 * refused with its rule; then the daemon stops and removes its sockets. (The owner-console
 * issue replaces this with the full demo.)
 */
const TEAMD = fileURLToPath(new URL("../daemon/main.js", import.meta.url));
const SHIM = fileURLToPath(new URL("../shim/main.js", import.meta.url));

function run(program: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [program, ...args], { env: { ...process.env, ...env }, timeout: 15_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code ?? 1) : 0, out: (stdout + stderr).trim() });
    });
  });
}

function step(text: string): void {
  process.stdout.write(`\n== ${text}\n`);
}

function show(command: string, result: { code: number; out: string }): void {
  process.stdout.write(`$ ${command}\n${result.out}\n(exit ${result.code})\n`);
}

async function main(): Promise<number> {
  const home = await mkdtemp(join(tmpdir(), "teamd-demo-"));
  const env = { TEAMD_HOME: home };
  let failures = 0;
  const expect = (ok: boolean, what: string) => {
    if (!ok) {
      failures++;
      process.stdout.write(`!! unexpected: ${what}\n`);
    }
  };
  try {
    step(`start the daemon (TEAMD_HOME=${home}) with two debug seats: alice (team debug) and bob (team web)`);
    const daemon = await startChild([TEAMD, "serve", "--seat", "alice", "--seat", "bob@web"], env, "teamd: ready");
    try {
      const alice = join(home, "run/seats/debug.alice.sock");
      const bob = join(home, "run/seats/web.bob.sock");

      step("each seat's shim asks who it is; the answer is the socket it called on");
      const a = await run(SHIM, ["whoami"], { TEAMD_SOCKET: alice });
      show(`TEAMD_SOCKET=${alice} teamd-shim whoami`, a);
      expect(a.code === 0 && a.out.includes("seat alice"), "alice's identity");
      const b = await run(SHIM, ["whoami", "--json"], { TEAMD_SOCKET: bob });
      show(`TEAMD_SOCKET=${bob} teamd-shim whoami --json`, b);
      expect(b.code === 0 && b.out.includes('"seat":"bob"'), "bob's identity");

      step("an owner call that arrives on a seat socket is refused, naming the rule");
      const refused = await run(TEAMD, ["status", "--socket", alice], env);
      show(`teamd status --socket ${alice}`, refused);
      expect(refused.code === 3 && refused.out.includes("channel.control-on-seat"), "refusal on the seat socket");

      step("the owner asks on the control socket");
      const status = await run(TEAMD, ["status"], env);
      show("teamd status", status);
      expect(status.code === 0, "status on the control socket");
    } finally {
      step("stop the daemon (SIGTERM): it removes its sockets");
      await stopChild(daemon);
    }
    process.stdout.write(failures === 0 ? "\ndemo: first light ok\n" : `\ndemo: ${failures} step(s) went wrong\n`);
    return failures === 0 ? 0 : 1;
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

process.exitCode = await main();
