import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Writable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

/**
 * The helper taking the pack its front started (shim/push-pack.ts adoptFrontPack): in a real
 * node process whose fd 4 is a pipe this test writes the front's account to, as
 * shim/git-remote-front.sh does — `pid N`, the revisions, `.`, later `exit N`. A stand-in for
 * pack-objects (a real process, `sleep`) shows what `stop` kills, and when it does not.
 */
const PUSH_PACK = join(process.cwd(), "dist/shim/push-pack.js");
const A = "a".repeat(40);
const B = "b".repeat(40);
const C = "c".repeat(40);
const NAME = ".teamd-pack-01234567-89ab-cdef-0123-456789abcdef.pack";

const PROGRAM = `
const { adoptFrontPack } = await import(${JSON.stringify(PUSH_PACK)});
const say = (line) => process.stdout.write(JSON.stringify(line) + "\\n");
const packer = adoptFrontPack();
if (packer === undefined || packer === "none") say({ adopted: packer ?? null });
else {
  say({ adopted: { file: packer.file, guess: packer.guess, front: packer.front } });
  // Lives until its stdin ends: "stop" stops the pack.
  process.stdin.on("data", (text) => { if (String(text).includes("stop")) { packer.stop(); say({ stopped: true }); } });
  process.stdin.on("end", () => process.exit(0));
  packer.done.then(() => say({ done: "ok" }), (error) => say({ done: error.message }));
}
`;

describe("the helper's pack from its front", () => {
  let tmp: string;
  const running: ChildProcess[] = [];
  /** The helper's side: node with the account pipe on fd 4; its lines, as they come. */
  const helper = (env: Record<string, string>) => {
    const child = spawn(process.execPath, ["--input-type=module", "-e", PROGRAM], {
      env: { PATH: process.env.PATH ?? "", TEAMD_TMP: tmp, ...env },
      stdio: ["pipe", "pipe", "inherit", "pipe", "pipe"],
    });
    running.push(child);
    const lines: unknown[] = [];
    let text = "";
    const waiters: Array<() => void> = [];
    child.stdout?.on("data", (chunk: Buffer) => {
      text += chunk.toString();
      for (let at = text.indexOf("\n"); at >= 0; at = text.indexOf("\n")) {
        lines.push(JSON.parse(text.slice(0, at)));
        text = text.slice(at + 1);
      }
      for (const wake of waiters.splice(0)) wake();
    });
    const line = async (n: number): Promise<unknown> => {
      while (lines.length <= n) await new Promise<void>((resolve) => waiters.push(resolve));
      return lines[n];
    };
    child.stdin?.on("error", () => undefined);
    const account = child.stdio[4] as Writable;
    account.on("error", () => undefined);
    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
    return { child, line, account, exited };
  };
  /** A stand-in for pack-objects, and whether it is still running. */
  const packObjects = () => {
    const sleeper = spawn("sleep", ["60"], { stdio: "ignore" });
    running.push(sleeper);
    const gone = new Promise<string | null>((resolve) => sleeper.on("exit", (_code, signal) => resolve(signal)));
    return { pid: sleeper.pid as number, gone };
  };

  beforeEach(() => {
    tmp = mkdtempSync(join(tmpdir(), "teamd-front-pack-"));
    writeFileSync(join(tmp, NAME), "PACK");
  });
  afterEach(() => {
    for (const child of running.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    rmSync(tmp, { recursive: true, force: true });
  });

  it("takes the pack, its guess and its file, and settles when the front says pack-objects exited 0", async () => {
    const h = helper({ TEAMD_EARLY_PACK: NAME });
    h.account.write(`pid 4242\n${A}\n--not\n${B}\n${C}\n${B}\n.\n`);
    expect(await h.line(0)).toEqual({ adopted: { file: { name: NAME, path: join(tmp, NAME) }, guess: { tip: A, excludes: [B, C] }, front: true } });
    h.account.end("exit 0\n");
    expect(await h.line(1)).toEqual({ done: "ok" });
    expect(existsSync(join(tmp, NAME))).toBe(true);
    h.child.stdin?.end();
  });

  it("fails the pack when pack-objects failed, or the front ended without its exit", async () => {
    const failed = helper({ TEAMD_EARLY_PACK: NAME });
    failed.account.end(`pid 4242\n${A}\n--not\n${B}\n.\nexit 128\n`);
    await failed.line(0);
    expect(await failed.line(1)).toEqual({ done: "git pack-objects --revs --stdout -q failed (128)" });
    failed.child.stdin?.end();
    const cut = helper({ TEAMD_EARLY_PACK: NAME });
    cut.account.write(`pid 4242\n${A}\n--not\n${B}\n.\n`);
    await cut.line(0);
    cut.account.end();
    expect(await cut.line(1)).toEqual({ done: "git pack-objects --revs --stdout -q failed (no exit status)" });
    cut.child.stdin?.end();
  });

  it("stops pack-objects by its id while it runs, and removes the file", async () => {
    const pack = packObjects();
    const h = helper({ TEAMD_EARLY_PACK: NAME });
    h.account.write(`pid ${pack.pid}\n${A}\n--not\n${B}\n.\n`);
    await h.line(0);
    h.child.stdin?.write("stop\n");
    expect(await h.line(1)).toEqual({ stopped: true });
    expect(await pack.gone).toBe("SIGKILL");
    expect(existsSync(join(tmp, NAME))).toBe(false);
    h.child.stdin?.end();
  });

  it("kills nothing once the front said pack-objects exited: its id may name another process by then", async () => {
    const other = packObjects();
    const h = helper({ TEAMD_EARLY_PACK: NAME });
    h.account.write(`pid ${other.pid}\n${A}\n--not\n${B}\n.\nexit 0\n`);
    await h.line(0);
    expect(await h.line(1)).toEqual({ done: "ok" });
    h.child.stdin?.end("stop\n");
    expect(await h.line(2)).toEqual({ stopped: true });
    await h.exited;
    const still = await Promise.race([other.gone, new Promise((resolve) => setTimeout(() => resolve("running"), 200))]);
    expect(still).toBe("running");
  });

  it("takes nothing from an account it cannot read as the front writes it, and stops what it names", async () => {
    const bad = [
      `pid 0\n${A}\n--not\n${B}\n.\n`,
      `pid x\n${A}\n--not\n${B}\n.\n`,
      `PID\n`,
      `${A}\n--not\n${B}\n.\n`,
      `pid 1\n${A.toUpperCase()}\n--not\n${B}\n.\n`,
      `pid 1\n${A}\n${B}\n.\n`,
      `pid 1\n${A}\n--not\n.\n`,
      `pid 1\n${A}\n--not\n${B}\n--all\n.\n`,
    ];
    for (const account of bad) {
      writeFileSync(join(tmp, NAME), "PACK");
      const h = helper({ TEAMD_EARLY_PACK: NAME });
      h.account.end(account);
      expect(await h.line(0), account).toEqual({ adopted: null });
      expect(existsSync(join(tmp, NAME)), account).toBe(false);
      await h.exited;
    }
    // The process an otherwise sound account names is stopped with it.
    const pack = packObjects();
    const h = helper({ TEAMD_EARLY_PACK: NAME });
    h.account.end(`pid ${pack.pid}\n${A}\n--not\n${B}\nnot an id\n.\n`);
    expect(await h.line(0)).toEqual({ adopted: null });
    expect(await pack.gone).toBe("SIGKILL");
  });

  it("takes no file but the front's own in the tmp folder, and nothing where no front ran", async () => {
    const outside = join(tmp, "keep.pack");
    writeFileSync(outside, "PACK");
    for (const name of ["keep.pack", `../${NAME}`, "/etc/passwd"]) {
      const h = helper({ TEAMD_EARLY_PACK: name });
      h.account.end(`pid 4242\n${A}\n--not\n${B}\n.\nexit 0\n`);
      expect(await h.line(0), name).toEqual({ adopted: null });
      await h.exited;
    }
    expect(existsSync(outside)).toBe(true);
    const none = helper({});
    expect(await none.line(0)).toEqual({ adopted: "none" });
  });
});
