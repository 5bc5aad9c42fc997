import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createBroker, createGithubTracker, SCRUBBED_CREDENTIAL, TrackerError, type GithubTrackerConfig } from "../../src/broker/index.js";
import { canaryForms, holdsCanary, startFakeGithub, type FakeGithub } from "./fake-github.js";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** No known key shape: only the broker's credential scrub can catch it. */
const TOKEN = "tkn-canary/8b2c+41fe=9d07a3c65e10";

describe("the GitHub Issues adapter against a fake GitHub on loopback, and the canary token", () => {
  let gh: FakeGithub;
  let config: GithubTrackerConfig;
  beforeAll(async () => {
    gh = await startFakeGithub({ token: TOKEN, owner: "acme", repo: "web" });
    config = { kind: "github", name: "web", owner: "acme", repo: "web", api: gh.url, token: TOKEN, claimLabel: "teamd-claimed", assignee: "acme-bot" };
  });
  afterAll(async () => gh?.close());

  const kind = async (p: Promise<unknown>) => {
    const error = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TrackerError);
    expect(holdsCanary((error as Error).message, TOKEN)).toBeUndefined();
    return (error as TrackerError).kind;
  };

  it("sends the token only as the Authorization header, to the configured base", async () => {
    const before = gh.seen.length;
    await createGithubTracker(config).pull();
    const calls = gh.seen.slice(before);
    expect(calls).toEqual([{ method: "GET", path: "/repos/acme/web/issues?state=open&per_page=100", authorized: true, body: "" }]);
  });

  it("posts a comment with the account's token, never the tracker's; a token GitHub refuses is an upstream error that quotes nothing", async () => {
    const account = "acct-comment-canary-55aa";
    const own = await startFakeGithub({ token: TOKEN, owner: "acme", repo: "web", commentTokens: [account] });
    try {
      const tracker = createGithubTracker({ ...config, api: own.url });
      const summary = await tracker.comment("2", "hello", { account: "gh:bot", token: account, seat: "proj/a" });
      expect(summary.id).toBe("2");
      expect(own.comments).toEqual([{ issue: 2, body: "hello", authorization: `Bearer ${account}` }]);
      expect(own.seen.filter((s) => s.path.endsWith("/comments")).map((s) => s.authorized)).toEqual([true]);
      expect(await kind(tracker.comment("2", "again", { account: "gh:bot", token: "not-the-account-token", seat: "proj/a" }))).toBe("upstream");
      expect(own.comments).toHaveLength(1);
    } finally {
      await own.close();
    }
  });

  it("the broker's replies carry the canary in no form, wherever the fake planted it", async () => {
    const home = mkdtempSync(join(tmpdir(), "teamd-broker-gh-"));
    try {
      mkdirSync(join(home, "broker"));
      const file = join(home, "broker", "trackers.json");
      writeFileSync(file, JSON.stringify({ trackers: { web: { kind: "github", repo: "acme/web", api: gh.url, token: TOKEN } } }));
      chmodSync(file, 0o600);
      const broker = createBroker({ teamdHome: home, env: {} });
      const resolved = await broker.resolve("proj", "gh:web", "web");
      const pulled = await broker.run(resolved, "pull", "", "proj/dev");
      const read1 = await broker.run(resolved, "read", "1", "proj/dev");
      const read2 = await broker.run(resolved, "read", "2", "proj/dev");
      const read4 = await broker.run(resolved, "read", "4", "proj/dev");
      const all = JSON.stringify([pulled, read1, read2, read4]);
      expect(holdsCanary(all, TOKEN), all).toBeUndefined();
      for (const form of canaryForms(TOKEN)) expect(all).not.toContain(form);
      // What is served: the allowlist, pull requests left out, scrubbed values marked.
      if (pulled.operation !== "pull" || read1.operation !== "read" || read2.operation !== "read" || read4.operation !== "read")
        throw new Error("wrong answers");
      expect(pulled.tasks.map((t) => t.id)).toEqual(["1", "2", "4"]);
      expect(Object.keys(read1.task).sort()).toEqual(["assignee", "body", "claimed", "id", "labels", "state", "title", "url"]);
      expect(read1.task.title).toBe(SCRUBBED_CREDENTIAL);
      expect(read1.task.labels).toEqual(["bug", SCRUBBED_CREDENTIAL]);
      expect(read1.task.assignee).toBe("alice");
      expect(read1.task.body.split("\n")[0]).toBe("Steps:");
      expect(read1.task.body.split("\n").at(-1)).toBe("The rest of the task is fine.");
      expect(read2.task.body).toContain("[scrubbed by teamd: looks like a GitHub token]");
      expect(read2.task.title).toBe("Clean task");
      expect(read4.task).toMatchObject({ title: SCRUBBED_CREDENTIAL, body: SCRUBBED_CREDENTIAL, assignee: SCRUBBED_CREDENTIAL, url: SCRUBBED_CREDENTIAL });
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it("claims with a label naming the seat and the owner's assignee; again by the same seat is a no-op, by another refused", async () => {
    const tracker = createGithubTracker(config);
    const claimed = await tracker.claim("2", "proj/dev");
    expect(claimed).toMatchObject({ id: "2", claimed: true, assignee: "acme-bot" });
    expect(gh.issues.get(2)?.labels.map((l) => l.name)).toEqual(["web", "teamd-claimed", "teamd-claimed:proj/dev"]);
    const posts = gh.seen.filter((s) => s.method === "POST");
    expect(posts.map((p) => p.path)).toEqual(["/repos/acme/web/issues/2/labels", "/repos/acme/web/issues/2/assignees"]);
    for (const p of posts) expect(holdsCanary(p.body, TOKEN)).toBeUndefined();
    expect(await tracker.claim("2", "proj/dev")).toMatchObject({ claimed: true });
    expect(gh.seen.filter((s) => s.method === "POST")).toHaveLength(2);
    expect(await kind(tracker.claim("2", "proj/other"))).toBe("claimed");
  });

  it("maps failures without echoing what GitHub sent: 401 (its body echoes the header), 404, a pull request, a bad id", async () => {
    expect(await kind(createGithubTracker({ ...config, token: "wrong-token-0000" }).pull())).toBe("upstream");
    expect(await kind(createGithubTracker(config).read("99"))).toBe("task");
    expect(await kind(createGithubTracker(config).read("3"))).toBe("task");
    expect(await kind(createGithubTracker(config).read("abc"))).toBe("task");
  });

  it("a tracker that does not answer is unreachable within the deadline", async () => {
    const silent: Server = createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
    try {
      const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
      const started = Date.now();
      expect(await kind(createGithubTracker({ ...config, api: url }, { deadlineMs: 300 }).pull())).toBe("unreachable");
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      silent.closeAllConnections();
      await new Promise<void>((r) => silent.close(() => r()));
    }
  });
});
