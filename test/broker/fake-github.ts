import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A fake GitHub REST API on 127.0.0.1 for the broker's tests: a real node:http server the test
 * starts and stops. It answers only a request carrying `Authorization: Bearer <token>`, and it
 * plants the token everywhere a careless broker could pass it on: in a response header, in
 * titles, labels, bodies (raw, base64, base64url, hex, URL-encoded), in nested objects the
 * allowlist drops, and in its 401 body (which echoes the Authorization header it got).
 */
export interface FakeIssue {
  number: number;
  title: string;
  body: string;
  state: string;
  labels: { name: string }[];
  assignee: { login: string; [k: string]: unknown } | null;
  html_url: string;
  pull_request?: unknown;
  [k: string]: unknown;
}

export interface FakeGithub {
  readonly url: string;
  readonly issues: Map<number, FakeIssue>;
  /** Every request the server saw: method, path and whether it carried the right token. */
  readonly seen: { method: string; path: string; authorized: boolean; body: string }[];
  /** Issues whose POSTs the server drops unanswered (the connection cut): a claim nobody answered. */
  readonly dropPosts: Set<number>;
  /** Comments posted, with the Authorization header each came with (compared by the test to the account's token). */
  readonly comments: { issue: number; body: string; authorization: string }[];
  close(): Promise<void>;
}

export function plantedIssues(token: string, owner: string, repo: string): FakeIssue[] {
  const b64 = Buffer.from(token).toString("base64");
  const b64url = Buffer.from(`user:${token}`).toString("base64url");
  const hex = Buffer.from(token).toString("hex");
  const url = (n: number) => `https://github.example/${owner}/${repo}/issues/${n}`;
  return [
    {
      number: 1,
      title: `Rotate ${token} before Friday`,
      body: [
        "Steps:",
        `curl -H 'Authorization: Bearer ${token}' …`,
        `basic: ${b64}`,
        `hex dump: ${hex.toUpperCase()}`,
        `url: https://x.example/?t=${encodeURIComponent(token)}`,
        `url-safe: ${b64url}`,
        "The rest of the task is fine.",
      ].join("\n"),
      state: "open",
      labels: [{ name: "bug" }, { name: `ci-${b64}` }],
      assignee: { login: "alice", token, nested: { deeper: { secret: token } } },
      html_url: url(1),
      user: { login: "bob", token },
    },
    {
      number: 2,
      title: "Clean task",
      body: `Nothing secret here.\nA different key shape: ghp_${"A".repeat(36)}\n`,
      state: "open",
      labels: [{ name: "web" }],
      assignee: null,
      html_url: url(2),
    },
    { number: 3, title: "A pull request, not a task", body: "", state: "open", labels: [], assignee: null, html_url: url(3), pull_request: { url: "x" } },
    {
      number: 4,
      title: hex,
      body: Buffer.from(`prefix-${token}-suffix`).toString("base64"),
      state: "open",
      labels: [],
      assignee: { login: token },
      html_url: `${url(4)}?access_token=${token}`,
    },
  ];
}

async function body(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > 1 << 20) break;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

export async function startFakeGithub(options: { token: string; owner: string; repo: string; commentTokens?: readonly string[] }): Promise<FakeGithub> {
  const issues = new Map(plantedIssues(options.token, options.owner, options.repo).map((i) => [i.number, i]));
  const seen: FakeGithub["seen"] = [];
  const dropPosts = new Set<number>();
  const comments: FakeGithub["comments"] = [];
  const prefix = `/repos/${options.owner}/${options.repo}`;
  const send = (res: ServerResponse, status: number, value: unknown) => {
    const text = JSON.stringify(value);
    res.writeHead(status, { "content-type": "application/json", "x-oauth-token-echo": options.token, "set-cookie": `session=${options.token}` });
    res.end(text);
  };
  const server: Server = createServer((req, res) => {
    void (async () => {
      const text = await body(req);
      const path = req.url ?? "";
      // A comment is accepted under the tracker's token or an account's (act-as): which one came is recorded.
      const commenting = req.method === "POST" && path.endsWith("/comments");
      const authorized =
        req.headers.authorization === `Bearer ${options.token}` ||
        (commenting && (options.commentTokens ?? []).some((t) => req.headers.authorization === `Bearer ${t}`));
      seen.push({ method: req.method ?? "", path, authorized, body: text });
      if (!authorized) return send(res, 401, { message: "Bad credentials", got: req.headers.authorization ?? "", token: options.token });
      const u = new URL(path, "http://x");
      if (req.method === "GET" && u.pathname === `${prefix}/issues`) {
        return send(
          res,
          200,
          [...issues.values()].filter((i) => i.state === u.searchParams.get("state")),
        );
      }
      const m = /^\/issues\/(\d+)(\/labels|\/assignees|\/comments)?$/.exec(u.pathname.slice(prefix.length));
      if (!u.pathname.startsWith(prefix) || m === null) return send(res, 404, { message: "Not Found", token: options.token });
      const issue = issues.get(Number(m[1]));
      if (issue === undefined) return send(res, 404, { message: "Not Found", documentation_url: `https://docs.example/?t=${options.token}` });
      if (req.method === "GET" && m[2] === undefined) return send(res, 200, issue);
      if (req.method === "POST" && dropPosts.has(issue.number)) return void req.socket.destroy();
      if (req.method === "POST" && m[2] === "/labels") {
        const add = (JSON.parse(text) as { labels: string[] }).labels;
        for (const name of add) if (!issue.labels.some((l) => l.name === name)) issue.labels.push({ name });
        return send(
          res,
          200,
          issue.labels.map((l) => ({ ...l, token: options.token })),
        );
      }
      if (req.method === "POST" && m[2] === "/comments") {
        comments.push({ issue: issue.number, body: (JSON.parse(text) as { body: string }).body, authorization: req.headers.authorization ?? "" });
        return send(res, 201, { id: comments.length, body: "echo", user: { login: "acme-bot", token: options.token } });
      }
      if (req.method === "POST" && m[2] === "/assignees") {
        const [login] = (JSON.parse(text) as { assignees: string[] }).assignees;
        issue.assignee = { login: login ?? "" };
        return send(res, 201, issue);
      }
      return send(res, 404, { message: "Not Found" });
    })().catch(() => {
      res.statusCode = 500;
      res.end();
    });
  });
  // Bounded: nothing the test forgets keeps a socket open for long.
  server.requestTimeout = 10_000;
  server.headersTimeout = 10_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    issues,
    seen,
    dropPosts,
    comments,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Every form the canary may take: a grep for any of them over everything a run produced. */
export function canaryForms(token: string): string[] {
  const bytes = Buffer.from(token);
  const forms = new Set([token, encodeURIComponent(token), bytes.toString("hex"), bytes.toString("hex").toUpperCase()]);
  for (let k = 0; k < 3; k++) {
    const shifted = Buffer.concat([Buffer.alloc(k), bytes]).toString("base64");
    const core = shifted.slice(k === 0 ? 0 : 4, 4 * Math.floor((k + bytes.length) / 3));
    forms.add(core);
    forms.add(core.replace(/\+/g, "-").replace(/\//g, "_"));
  }
  return [...forms];
}

/** Whether a text or byte buffer holds the canary in any form (latin1 view: raw bytes of a SQLite file). */
export function holdsCanary(data: string | Buffer, token: string): string | undefined {
  const text = typeof data === "string" ? data : data.toString("latin1");
  const lower = text.toLowerCase();
  const hex = Buffer.from(token).toString("hex");
  if (lower.includes(hex)) return "hex";
  return canaryForms(token).find((form) => text.includes(form));
}
