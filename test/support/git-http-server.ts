import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A real git smart-HTTP remote on 127.0.0.1 for the act-as tests: a node:http server the test
 * starts and stops, running `git http-backend` as a CGI for each request over bare
 * repositories under `root`. It answers only a request carrying HTTP Basic with `token` as
 * the password (401 otherwise, as a forge does), and records what it received — so a test can
 * show the daemon pushed with the account's credential, and what no seat ever had.
 */
export interface GitHttpServer {
  readonly url: string;
  /** Every request: method, path, whether its credential was the account's, the Basic user. */
  readonly seen: { method: string; path: string; authorized: boolean; user: string; authorization: string; argvHolding: number }[];
  close(): Promise<void>;
}

function basic(header: string | undefined): { user: string; password: string } | undefined {
  const m = /^Basic ([A-Za-z0-9+/=]+)$/.exec(header ?? "");
  if (m === null) return undefined;
  const text = Buffer.from(m[1] as string, "base64").toString("utf8");
  const colon = text.indexOf(":");
  return colon < 0 ? undefined : { user: text.slice(0, colon), password: text.slice(colon + 1) };
}

function cgi(root: string, req: IncomingMessage, res: ServerResponse, user: string): void {
  const url = new URL(req.url ?? "/", "http://x");
  const child = spawn("git", ["http-backend"], {
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: "1",
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
      // http-backend enables receive-pack for an authenticated user.
      REMOTE_USER: user,
      REMOTE_ADDR: "127.0.0.1",
      REQUEST_METHOD: req.method ?? "GET",
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.slice(1),
      CONTENT_TYPE: req.headers["content-type"] ?? "",
      ...(req.headers["content-encoding"] !== undefined ? { HTTP_CONTENT_ENCODING: String(req.headers["content-encoding"]) } : {}),
      ...(req.headers["git-protocol"] !== undefined ? { GIT_PROTOCOL: String(req.headers["git-protocol"]) } : {}),
    },
    stdio: ["pipe", "pipe", "ignore"],
  });
  req.pipe(child.stdin);
  child.stdin.on("error", () => undefined);
  let head = Buffer.alloc(0);
  let started = false;
  child.stdout.on("data", (chunk: Buffer) => {
    if (started) {
      res.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const crlf = head.indexOf("\r\n\r\n");
    const lf = head.indexOf("\n\n");
    const end = crlf >= 0 && (lf < 0 || crlf < lf) ? crlf : lf;
    if (end < 0) return;
    const sep = end === crlf ? 4 : 2;
    let status = 200;
    for (const line of head.subarray(0, end).toString("latin1").split(/\r?\n/)) {
      const colon = line.indexOf(":");
      if (colon < 0) continue;
      const name = line.slice(0, colon).trim();
      const value = line.slice(colon + 1).trim();
      if (name.toLowerCase() === "status") status = Number.parseInt(value, 10);
      else res.setHeader(name, value);
    }
    res.statusCode = status;
    started = true;
    res.write(head.subarray(end + sep));
  });
  child.on("close", () => res.end());
  child.on("error", () => {
    res.statusCode = 500;
    res.end();
  });
}

/**
 * How many processes of the machine hold the token in their argv right now — read while the
 * pushing git waits for this server's answer, so a credential passed on a command line is seen.
 */
function argvHolding(token: string): number {
  let n = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`).includes(token)) n++;
    } catch {
      // gone, or not ours to read
    }
  }
  return n;
}

export async function startGitHttpServer(options: { root: string; token: string }): Promise<GitHttpServer> {
  const seen: GitHttpServer["seen"] = [];
  const server: Server = createServer((req, res) => {
    const credential = basic(req.headers.authorization);
    const authorized = credential !== undefined && credential.password === options.token;
    seen.push({
      method: req.method ?? "",
      path: req.url ?? "",
      authorized,
      user: credential?.user ?? "",
      authorization: req.headers.authorization ?? "",
      argvHolding: argvHolding(options.token),
    });
    if (!authorized) {
      res.writeHead(401, { "www-authenticate": 'Basic realm="teamd-test"', "content-type": "text/plain" });
      res.end("bad credentials\n");
      req.resume();
      return;
    }
    cgi(options.root, req, res, credential.user);
  });
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
