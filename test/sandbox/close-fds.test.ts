import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { BASH, BASH_COMMAND, closeFdsScript } from "../../src/sandbox/close-fds.js";

/**
 * The launch chain's bash (every seat launch, exec and contained git) runs with its stdin a
 * socketpair, as Node gives a child's stdin. A bash that finds a socket there takes itself for a
 * remote shell and runs ~/.bashrc — the daemon user's, outside containment, every fd still open.
 * Here HOME is a folder whose .bashrc leaves a mark; the control shows that bash does.
 */
const home = mkdtempSync(join(tmpdir(), "teamd-bashrc-"));
afterAll(() => rmSync(home, { recursive: true, force: true }));
const mark = join(home, "bashrc-ran");
writeFileSync(join(home, ".bashrc"), `echo ran > '${mark}'\necho from-bashrc\n`);

function chain(argv: readonly string[]): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(BASH, argv, { stdio: ["pipe", "pipe", "pipe"], env: { HOME: home, PATH: "/usr/bin:/bin" }, cwd: "/" });
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout }));
    child.stdin.end();
  });
}

describe.runIf(process.platform === "linux")("the launch chain's bash", () => {
  it("runs no ~/.bashrc, though its stdin is a socket: the script alone, its output alone", async () => {
    rmSync(mark, { force: true });
    const r = await chain([...BASH_COMMAND, closeFdsScript(2, 'exec "$@"'), "teamd-launch", "/bin/echo", "only-this"]);
    expect(r).toEqual({ code: 0, stdout: "only-this\n" });
    expect(existsSync(mark)).toBe(false);
  });

  it("the control: `bash -c` with the same stdin runs the rc file, where bash was built to (Debian's is)", async () => {
    rmSync(mark, { force: true });
    const r = await chain(["-c", closeFdsScript(2, 'exec "$@"'), "teamd-launch", "/bin/echo", "only-this"]);
    // Where this bash was built without it, the first test proves nothing more than the argv: say so.
    if (!existsSync(mark)) console.warn("this bash does not read ~/.bashrc for a socket stdin (SSH_SOURCE_BASHRC off): the control shows nothing here");
    else expect(r.stdout).toBe("from-bashrc\nonly-this\n");
  });
});
