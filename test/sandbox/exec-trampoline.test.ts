import { describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import { commandFitsTrampoline, encodeCommand, trampolineCommand, trampolineFailure } from "../../src/sandbox/exec-trampoline.js";

/**
 * The ready exec's trampoline (src/sandbox/exec-trampoline.ts) run by the host's real bash, its
 * control pipe on fd 6 as the launcher gives it: the command it execs must get exactly the
 * environment, argv and fds it was given, and a command it cannot run must fail with bwrap's words.
 */
const FD = 6;

async function trampoline(command: readonly string[] | undefined, env: Record<string, string>, cwd = "/") {
  const [file, ...args] = trampolineCommand(FD);
  const child = spawn(file as string, args, { stdio: ["pipe", "pipe", "pipe", "ignore", "ignore", "ignore", "pipe"], env, cwd });
  const control = (child.stdio as unknown as Duplex[])[FD] as Duplex;
  let stdout = "";
  let stderr = "";
  let said = "";
  child.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  control.on("data", (chunk: Buffer) => (said += chunk.toString()));
  child.stdin?.end();
  control.end(command === undefined ? Buffer.alloc(0) : encodeCommand(command));
  const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
  return { code, stdout, stderr, said };
}

describe.runIf(process.platform === "linux")("the ready exec's trampoline, run by bash", () => {
  const env = { ZED: "last-set-first", PATH: "/usr/bin:/bin", ALPHA: "1", PWD: "/" };

  it("hands the command the environment it was given, in its order, and nothing of bash's", async () => {
    const ran = await trampoline(["env"], env);
    expect(ran).toMatchObject({ code: 0, stderr: "", said: "" });
    expect(ran.stdout).toBe("ZED=last-set-first\nPATH=/usr/bin:/bin\nALPHA=1\nPWD=/\n");
  });

  it("passes every word as it came; the command holds no fd but its three streams", async () => {
    const words = ["a b", "", "-n", "line\nbreak", "é", "$HOME", "x=y"];
    const ran = await trampoline(["sh", "-c", 'for w in "$@"; do printf "[%s]" "$w"; done; echo; ls /proc/self/fd', "zero", ...words], env);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout.startsWith(`${words.map((w) => `[${w}]`).join("")}\n`)).toBe(true);
    const listed = ran.stdout
      .slice(ran.stdout.lastIndexOf("]") + 2)
      .trim()
      .split("\n");
    // The control pipe is closed before the exec (what else this process inherited, the launch chain closes).
    expect(listed).toEqual(expect.arrayContaining(["0", "1", "2"]));
    expect(listed).not.toContain(String(FD));
  });

  it("runs a script without #! with /bin/sh, as execvp does", async () => {
    const dir = mkdtempSync(join(tmpdir(), "teamd-trampoline-"));
    try {
      const script = join(dir, "plain");
      writeFileSync(script, 'echo "plain:$0"\n');
      chmodSync(script, 0o755);
      expect(await trampoline([script], env)).toMatchObject({ code: 0, stdout: `plain:${script}\n` });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a command not found, a file not executable and a folder fail with bwrap's words and say which on the pipe", async () => {
    expect(await trampoline(["no-such-command-here"], env)).toMatchObject({
      code: 1,
      stdout: "",
      stderr: "bwrap: execvp no-such-command-here: No such file or directory\n",
      said: "N",
    });
    expect(await trampoline(["/etc/passwd"], env)).toMatchObject({ code: 1, stderr: "bwrap: execvp /etc/passwd: Permission denied\n", said: "P" });
    expect(await trampoline(["/etc"], env)).toMatchObject({ code: 1, stderr: "bwrap: execvp /etc: Permission denied\n", said: "P" });
    expect(await trampoline(["/no/such/file"], env)).toMatchObject({ code: 1, said: "N" });
    expect(trampolineFailure("N")).toBe("No such file or directory");
    expect(trampolineFailure("P")).toBe("Permission denied");
    expect(trampolineFailure("")).toBeUndefined();
  });

  it("let go without a command, it exits and runs nothing", async () => {
    expect(await trampoline(undefined, env)).toMatchObject({ code: 0, stdout: "", stderr: "", said: "" });
  });

  it("takes no command whose first word env would read as a variable, nor one with a NUL", () => {
    expect(commandFitsTrampoline(["true"])).toBe(true);
    expect(commandFitsTrampoline(["FOO=bar", "true"])).toBe(false);
    expect(commandFitsTrampoline(["printf", "a\0b"])).toBe(false);
    expect(commandFitsTrampoline([""])).toBe(false);
    expect(commandFitsTrampoline([])).toBe(false);
    expect(encodeCommand(["a", "", "b c"])).toEqual(Buffer.from("a\0\0b c\0"));
  });
});
