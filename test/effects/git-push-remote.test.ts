import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pushToRemote } from "../../src/effects/git-push-remote.js";
import { startGitHttpServer, type GitHttpServer } from "../support/git-http-server.js";
import { makeRepo } from "../support/repo.js";

/**
 * The publish effect against a real git smart-HTTP server on loopback (git http-backend behind
 * node:http, Basic auth with a canary token): the commit lands on the branch only with the
 * account's token; the token is in no process's argv while git waits for the server; a wrong
 * token, a non-fast-forward and an unreachable remote are each a refusal that changed nothing.
 */
const TOKEN = "acct-canary-7f3a91c2d4e5b60718";
const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@x", ...args], {
    cwd,
    encoding: "utf8",
    env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" },
  }).trim();

describe.runIf(process.platform === "linux")("pushToRemote: the owner's remote, under the account's credential", () => {
  let dir: string;
  let server: GitHttpServer;
  let hub: string;
  let remote: string;
  let first: string;
  let second: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "teamd-push-"));
    const work = makeRepo(dir, "work", { "a.txt": "a\n" });
    first = git(work, "rev-parse", "HEAD");
    git(work, "commit", "-q", "--allow-empty", "-m", "second");
    second = git(work, "rev-parse", "HEAD");
    hub = join(dir, "hub.git");
    git(dir, "clone", "-q", "--bare", work, hub);
    remote = join(dir, "remotes", "web.git");
    git(dir, "init", "-q", "--bare", "-b", "main", remote);
    server = await startGitHttpServer({ root: join(dir, "remotes"), token: TOKEN });
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const push = (commit: string, token: string, url = `${server.url}/web.git`) =>
    pushToRemote({ hub, commit, url, branch: "main", username: "x-access-token", token, timeoutMs: 60_000 });

  it("creates, then fast-forwards, the remote branch; the token travels only in the header", async () => {
    const created = await push(first, TOKEN);
    expect(created).toMatchObject({ kind: "done", status: "created" });
    expect(git(dir, "--git-dir", remote, "rev-parse", "main")).toBe(first);
    const updated = await push(second, TOKEN);
    expect(updated).toMatchObject({ kind: "done", status: "updated" });
    expect(git(dir, "--git-dir", remote, "rev-parse", "main")).toBe(second);
    const again = await push(second, TOKEN);
    expect(again).toMatchObject({ kind: "done", status: "up-to-date" });
    const authorized = server.seen.filter((s) => s.authorized);
    expect(authorized.some((s) => s.path.includes("git-receive-pack") && s.method === "POST")).toBe(true);
    expect(authorized.every((s) => s.user === "x-access-token")).toBe(true);
    // Read while each git waited for the server: no command line of the machine held the token.
    expect(server.seen.length).toBeGreaterThan(0);
    expect(server.seen.every((s) => s.argvHolding === 0)).toBe(true);
    for (const r of [created, updated, again]) expect(r.stderr).not.toContain(TOKEN);
  }, 120_000);

  it("control: the argv check sees a token on a command line", async () => {
    const holder = spawn("sh", ["-c", "sleep 5", "sh", TOKEN], { stdio: "ignore" });
    try {
      await new Promise((resolve) => setTimeout(resolve, 200));
      const answer = await fetch(`${server.url}/web.git/info/refs?service=git-receive-pack`);
      expect(answer.status).toBe(401);
      expect(server.seen.at(-1)?.argvHolding).toBeGreaterThan(0);
    } finally {
      holder.kill("SIGKILL");
    }
  });

  it("refuses a non-fast-forward: the remote keeps its commits (never forced)", async () => {
    const r = await push(first, TOKEN);
    expect(r.kind).toBe("refused");
    if (r.kind === "refused") expect(r.why).toMatch(/rejected/);
    expect(git(dir, "--git-dir", remote, "rev-parse", "main")).toBe(second);
  }, 60_000);

  it("refuses a wrong credential before any update, and never prompts", async () => {
    const before = server.seen.length;
    const r = await push(first, "wrong-token-0000000000");
    expect(r.kind).toBe("refused");
    if (r.kind === "refused") expect(r.why).toMatch(/credential refused/);
    expect(server.seen.slice(before).every((s) => !s.authorized)).toBe(true);
    expect(git(dir, "--git-dir", remote, "rev-parse", "main")).toBe(second);
  }, 60_000);

  it("refuses an unreachable remote, and a transport other than http(s)", async () => {
    const closed = await push(second, TOKEN, "http://127.0.0.1:1/web.git");
    expect(closed.kind).toBe("refused");
    // The kernel admits only https and loopback http; the effect refuses a file remote by itself too.
    const file = await push(second, TOKEN, `file://${remote}`);
    expect(file.kind).not.toBe("done");
  }, 60_000);
});
