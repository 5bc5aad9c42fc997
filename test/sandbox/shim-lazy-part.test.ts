import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Script } from "node:vm";
import { afterAll, describe, expect, it } from "vitest";
import { SHIM_LAZY_SUFFIX } from "../../src/sandbox/linux-base.js";

/**
 * The seat's shim is two files (scripts/build-shim.ts): a small front, and beside it its lazy part
 * (V8's code cache, then the commands' code). These check the built pair as a seat gets it: the
 * front alone answers --version, the cache is one this node takes, and a front refuses, in one
 * line, a part that is missing or from another build.
 */
const FRONT = join(process.cwd(), "dist/shim-bundle/teamd-shim.cjs");
const PART = `${FRONT}${SHIM_LAZY_SUFFIX}`;
const dir = mkdtempSync(join(tmpdir(), "teamd-shim-lazy-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The cache's length and the part's, as the front's code names them. */
function frontNumbers(): { cache: number; total: number } {
  const front = readFileSync(FRONT, "utf8");
  const cache = /toString\("latin1", (\d+)\)/.exec(front)?.[1];
  const total = /bytes\.length !== (\d+)\)/.exec(front)?.[1];
  if (cache === undefined || total === undefined) throw new Error("the front does not name its part's lengths");
  return { cache: Number(cache), total: Number(total) };
}

function runShim(front: string, args: readonly string[]) {
  return spawnSync(process.execPath, [front, ...args], {
    encoding: "utf8",
    env: { PATH: process.env.PATH ?? "", TEAMD_SOCKET: join(dir, "no-daemon.sock") },
    timeout: 30_000,
  });
}

describe("the shim's front and its lazy part", () => {
  it("the front is small and holds no command's code; the part holds it, in ASCII", () => {
    const front = readFileSync(FRONT);
    const part = readFileSync(PART);
    expect(front.length).toBeLessThan(100 * 1024);
    expect(front.includes("createRpcClient")).toBe(false);
    expect(part.includes("createRpcClient")).toBe(true);
    const { cache, total } = frontNumbers();
    expect(part.length).toBe(total);
    expect(part.subarray(cache).every((byte) => byte < 0x80)).toBe(true);
  });

  it("its code cache is one this node accepts (else every command compiles the part from scratch: ~7 ms in a seat)", () => {
    const part = readFileSync(PART);
    const { cache } = frontNumbers();
    const wrapped = /new \(require\("node:vm"\)\.Script\)\(("[^"]*") \+ source \+ ("[^"]*"),/.exec(readFileSync(FRONT, "utf8"));
    expect(wrapped).not.toBeNull();
    const [head, tail] = [JSON.parse(wrapped?.[1] as string) as string, JSON.parse(wrapped?.[2] as string) as string];
    const script = new Script(head + part.toString("latin1", cache) + tail, { filename: "/run/teamd/shim", cachedData: part.subarray(0, cache) });
    expect(script.cachedDataRejected).toBe(false);
    // The control: the same cache against another text is refused, so the check above can fail.
    const other = new Script(`${head}${part.toString("latin1", cache)}//${tail}`, { filename: "/run/teamd/shim", cachedData: part.subarray(0, cache) });
    expect(other.cachedDataRejected).toBe(true);
  });

  it("--version needs only the front; a command through the part reaches the daemon (here: none, exit 4)", () => {
    const front = join(dir, "alone");
    copyFileSync(FRONT, front);
    expect(runShim(front, ["--version"]).stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
    const paired = join(dir, "paired");
    copyFileSync(FRONT, paired);
    copyFileSync(PART, `${paired}${SHIM_LAZY_SUFFIX}`);
    const r = runShim(paired, ["whoami"]);
    expect(r.status, r.stderr).toBe(4);
    expect(r.stderr).toContain("cannot reach the teamd daemon");
  });

  it.each([
    ["missing", undefined, /its lazy part \S+alone\.lazy cannot be read \(ENOENT\)/],
    ["from another build", "x".repeat(1000), /its lazy part \S+other\.lazy is another build's \(1000 bytes, not \d+\)/],
  ])("a part %s: one line naming it and the fix, exit 1, for whoami and the command tree alike", (_what, content, message) => {
    const front = join(dir, content === undefined ? "alone" : "other");
    copyFileSync(FRONT, front);
    if (content !== undefined) writeFileSync(`${front}${SHIM_LAZY_SUFFIX}`, content);
    for (const args of [["whoami"], ["file", "stat", "README.md"]]) {
      const r = runShim(front, args);
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).toContain("start the seat again");
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
    }
    const json = runShim(front, ["whoami", "--json"]);
    expect(json.status).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ error: "failure", message: expect.stringMatching(message) as unknown });
  });
});
