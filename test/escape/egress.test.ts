import { waitFor } from "../support/wait.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile, execFileSync } from "node:child_process";
import { promisify } from "node:util";
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, type IncomingMessage, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { join, normalize } from "node:path";
import { makeRepo } from "../support/repo.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { createHarness, type TeamdHarness } from "../support/teamd-harness.js";
import { describeStored, openStore } from "../../src/ledger/index.js";

/**
 * Network egress (§12), attacked from inside seats started by `teamd start` through a real
 * daemon and ledger. Row proved (docs/enforcement.md): "Network egress: allowlisted,
 * mediated, recorded (§12)" — a seat reaches a declared host:port through its proxy (curl
 * over HTTP and over a CONNECT tunnel to a TLS server, git over HTTP), and is refused, with
 * the refusal recorded, for: a host not declared; a name that resolves to a private or
 * undeclared loopback address; a CONNECT to a disallowed target carrying an allowed Host
 * header; a stream written straight to the egress socket (the daemon decides, not the
 * proxy). A connection that ignores the proxy finds no route out.
 *
 * The servers are the test's own, on the host's loopback. The daemon resolves names through
 * TEAMD_TEST_EGRESS_HOSTS (the only resolver then: nothing leaves the machine). Seat `net`
 * declares 127.0.0.1/32 explicitly (the control: it reaches the servers); seat `strict`
 * declares the same hosts but no private range, so loopback targets are refused for it.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

interface LogRecord {
  type: string;
  action: string;
  [key: string]: unknown;
}

const hasOpenssl = (() => {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

describe.runIf(process.platform === "linux")("egress: a seat's network goes through teamd", () => {
  let h: TeamdHarness;
  let http: Server;
  let https: Server | undefined;
  let httpPort = 0;
  let tlsPort = 0;
  const seen: Array<{ url: string; host: string }> = [];

  const refusalRecorded = async (rule: string, needle: string) =>
    (await h.records<LogRecord>()).some(
      (r) => r.type === "refusal" && r.action === "egress.connect" && JSON.stringify(r).includes(rule) && JSON.stringify(r).includes(needle),
    );
  const reached = (path: string) => seen.some((s) => s.url.startsWith(path));
  /** Every record's full payload as JSON text, read from the ledger's store (teamd log --json leaves payloads out). */
  const payloads = (): string[] => {
    const store = openStore(join(h.home, "ledger", "ledger.db"), { readonly: true });
    try {
      return store
        .records(0, 100_000)
        .map((row) =>
          JSON.stringify(describeStored(row), (_k, v: unknown) =>
            typeof v === "bigint" ? String(v) : v instanceof Uint8Array ? Buffer.from(v).toString("latin1") : v,
          ),
        );
    } finally {
      store.close();
    }
  };

  beforeAll(async () => {
    h = await createHarness("teamd-egress-");
    // A bare repository the HTTP server serves with git's dumb protocol (static files).
    const origin = makeRepo(h.dir, "origin", { "README.md": "served over http\n" });
    const served = join(h.dir, "www", "served.git");
    mkdirSync(join(h.dir, "www"), { recursive: true });
    execFileSync("git", ["clone", "-q", "--bare", origin, served]);
    execFileSync("git", ["--git-dir", served, "update-server-info"]);
    const record = (req: IncomingMessage) => seen.push({ url: req.url ?? "", host: req.headers.host ?? "" });
    http = createHttpServer((req, res) => {
      record(req);
      const url = req.url ?? "/";
      if (url.startsWith("/served.git/")) {
        const file = normalize(join(h.dir, "www", url.split("?")[0] as string));
        try {
          if (!file.startsWith(join(h.dir, "www")) || !statSync(file).isFile()) throw new Error("no");
          res.end(readFileSync(file));
        } catch {
          res.statusCode = 404;
          res.end();
        }
        return;
      }
      res.end(`hello from the allowed server (${url})\n`);
    });
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    httpPort = (http.address() as AddressInfo).port;
    if (hasOpenssl) {
      const key = join(h.dir, "tls.key");
      const cert = join(h.dir, "tls.crt");
      execFileSync(
        "openssl",
        [
          "req",
          "-x509",
          "-newkey",
          "ec",
          "-pkeyopt",
          "ec_paramgen_curve:prime256v1",
          "-nodes",
          "-keyout",
          key,
          "-out",
          cert,
          "-days",
          "1",
          "-subj",
          "/CN=tls.test",
        ],
        { stdio: "ignore" },
      );
      https = createHttpsServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
        record(req);
        res.end("hello over tls\n");
      });
      await new Promise<void>((resolve) => https?.listen(0, "127.0.0.1", resolve));
      tlsPort = (https.address() as AddressInfo).port;
    }

    const hosts = { "allowed.test": "127.0.0.1", "tls.test": "127.0.0.1", "denied.test": "127.0.0.1", "private.test": "10.0.0.1", "loop2.test": "127.0.0.2" };
    await h.startDaemon({ env: { TEAMD_TEST_EGRESS_HOSTS: JSON.stringify(hosts) } });
    await h.ok(["init", "--yes"]);
    const allow = `["allowed.test:${httpPort}", "tls.test:${tlsPort || 1}", "private.test:${httpPort}", "loop2.test:${httpPort}"]`;
    writeFileSync(
      join(h.repo, "teamd.yaml"),
      `version: 1
team: proj
declare:
  branches: [main]
  labs: [anthropic]
seats:
  net:
    lab: anthropic
    capabilities: { read: ~ }
    start:
      command: [sleep, "3600"]
      network:
        allow: ${allow}
        private: [127.0.0.1/32]
  strict:
    lab: anthropic
    capabilities: { read: ~ }
    start:
      command: [sleep, "3600"]
      network:
        allow: ${allow}
  dark:
    lab: anthropic
    capabilities: { read: ~ }
    start:
      command: [sleep, "3600"]
`,
    );
    await h.ok(["apply", "--yes"]);
    await h.ok(["start", "--team", "proj"]);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
    await new Promise<void>((resolve) => (http ? http.close(() => resolve()) : resolve()));
    await new Promise<void>((resolve) => (https ? https.close(() => resolve()) : resolve()));
  });

  it("gives a seat with egress the proxy env, and a seat without it none", async () => {
    const withEgress = await h.sh("net", "echo $HTTPS_PROXY $http_proxy $NO_PROXY");
    expect(withEgress.stdout.trim()).toBe("http://127.0.0.1:3128 http://127.0.0.1:3128 localhost,127.0.0.1,::1");
    const without = await h.sh("dark", "echo proxy=${HTTPS_PROXY:-none}");
    expect(without.stdout.trim()).toBe("proxy=none");
  });

  it("reaches a declared host through the proxy with curl, recorded per connection with bytes and no content", async () => {
    const got = await h.sh("net", `curl -sS --max-time 20 http://allowed.test:${httpPort}/hello`);
    expect(got.code, got.stderr).toBe(0);
    expect(got.stdout).toBe("hello from the allowed server (/hello)\n");
    expect(reached("/hello")).toBe(true);
    const log = await h.records<LogRecord>();
    const intent = log.find((r) => r.type === "intent" && r.action === "egress.connect" && String(r.target).includes(`allowed.test:${httpPort}`));
    expect(intent, JSON.stringify(log.slice(-4))).toBeDefined();
    const full = payloads();
    const intentFull = full.find((p) => p.includes(`"seq":${String(intent?.seq)},`)) ?? "";
    expect(intentFull).toContain("127.0.0.1");
    expect(intentFull).toContain(`allowed.test`);
    const outcome = full.find((p) => p.includes('"type":"outcome"') && p.includes("egress.connect") && /up \d+ bytes, down [1-9]\d* bytes, \d+ ms/.test(p));
    expect(outcome, full.slice(-2).join("\n")).toBeDefined();
    // Never content: neither the request path's answer nor the body is in any record.
    expect(full.join("\n")).not.toContain("hello from the allowed server");
  });

  it.runIf(hasOpenssl)("tunnels CONNECT to a declared TLS server (curl https through HTTPS_PROXY)", async () => {
    const got = await h.sh("net", `curl -sS -k --max-time 20 https://tls.test:${tlsPort}/secure`);
    expect(got.code, got.stderr).toBe(0);
    expect(got.stdout).toBe("hello over tls\n");
    expect(reached("/secure")).toBe(true);
  });

  it("clones over HTTP with git through the proxy", async () => {
    const cloned = await h.sh("net", `cd $TMPDIR && git clone -q http://allowed.test:${httpPort}/served.git out 2>&1 && cat out/README.md`);
    expect(cloned.code, cloned.stdout + cloned.stderr).toBe(0);
    expect(cloned.stdout).toContain("served over http");
  });

  it("refuses a host not declared: a 403 naming egress.host, nothing reaches the server, the refusal is recorded", async () => {
    const got = await h.sh("net", `curl -sS --max-time 20 -w '%{http_code}' http://denied.test:${httpPort}/denied-plain`);
    expect(got.stdout).toContain("teamd: refused by egress.host");
    expect(got.stdout).toMatch(/403$/);
    expect(reached("/denied-plain")).toBe(false);
    expect(await refusalRecorded("egress.host", "denied.test")).toBe(true);
  });

  it("refuses a CONNECT to a disallowed target carrying an allowed Host header", async () => {
    const got = await h.sh(
      "net",
      `curl -sS -v --max-time 20 -p --proxy-header 'Host: allowed.test:${httpPort}' -H 'Host: allowed.test:${httpPort}' http://denied.test:${httpPort}/relayed 2>&1; echo exit=$?`,
    );
    // The failed CONNECT names the rule where a client shows it: the status line.
    expect(got.stdout).toContain("HTTP/1.1 403 Forbidden (teamd egress.host)");
    expect(got.stdout).not.toContain("exit=0");
    expect(reached("/relayed")).toBe(false);
    // Plain forwarding with the same Host header: the URL decides, not the header.
    const plain = await h.sh("net", `curl -sS --max-time 20 -H 'Host: allowed.test:${httpPort}' http://denied.test:${httpPort}/relayed-plain`);
    expect(plain.stdout).toContain("egress.host");
    expect(reached("/relayed-plain")).toBe(false);
    expect(await refusalRecorded("egress.host", "denied.test")).toBe(true);
  });

  it("refuses a declared name that resolves to a private address (egress.address), and never connects", async () => {
    const got = await h.sh("net", `curl -sS --max-time 20 http://private.test:${httpPort}/private`);
    expect(got.stdout).toContain("teamd: refused by egress.address");
    expect(got.stdout).toContain("10.0.0.1");
    expect(await refusalRecorded("egress.address", "private.test")).toBe(true);
  });

  it("refuses loopback that is not declared: 127.0.0.2 for `net`, and the very server `net` reaches for `strict`", async () => {
    const other = await h.sh("net", `curl -sS --max-time 20 http://loop2.test:${httpPort}/loop2`);
    expect(other.stdout).toContain("egress.address");
    expect(reached("/loop2")).toBe(false);
    const strict = await h.sh("strict", `curl -sS --max-time 20 http://allowed.test:${httpPort}/strict`);
    expect(strict.stdout).toContain("teamd: refused by egress.address");
    expect(strict.stdout).toContain("loopback");
    expect(reached("/strict")).toBe(false);
    expect(await refusalRecorded("egress.address", "allowed.test")).toBe(true);
  });

  it("decides in the daemon: a header written straight to the egress socket is refused the same way", async () => {
    const script = `const s=require("net").connect("/run/teamd/egress.sock");s.on("connect",()=>s.write("denied.test:${httpPort}\\nGET /direct HTTP/1.0\\r\\n\\r\\n"));s.on("data",d=>process.stdout.write(d));`;
    const got = await h.sh("net", `node -e '${script}'`);
    expect(got.stdout).toMatch(/^NO egress\.host /);
    expect(reached("/direct")).toBe(false);
    // The control: the same stream to an allowed target is answered OK and relayed.
    const ok = `const s=require("net").connect("/run/teamd/egress.sock");s.on("connect",()=>s.write("allowed.test:${httpPort}\\nGET /direct-ok HTTP/1.0\\r\\n\\r\\n"));s.on("data",d=>process.stdout.write(d));`;
    const allowed = await h.sh("net", `node -e '${ok}'`);
    expect(allowed.stdout).toMatch(/^OK 127\.0\.0\.1\n/);
    expect(reached("/direct-ok")).toBe(true);
    // A header that is not host:port (a raw request line, a wildcard) is refused, never guessed at.
    for (const header of ["GET http://allowed.test/ HTTP/1.1", `*.test:${httpPort}`]) {
      const raw = `const s=require("net").connect("/run/teamd/egress.sock");s.on("connect",()=>s.write(${JSON.stringify(`${header}
`)}));s.on("data",d=>process.stdout.write(d));`;
      const malformed = await h.sh("net", `node -e '${raw}'`);
      expect(malformed.stdout, header).toMatch(/^NO request\.malformed /);
    }
  });

  it("bounds a seat's open connections: the 65th is refused (egress.limit) while 64 are open", async () => {
    const script = `const net=require("net");const open=[];const one=()=>new Promise((res)=>{const s=net.connect("/run/teamd/egress.sock");let t="";s.on("data",(d)=>{t+=d;if(t.includes("\\n"))res([s,t.split("\\n")[0]]);});s.on("connect",()=>s.write("allowed.test:${httpPort}\\n"));});(async()=>{const first=await Promise.all(Array.from({length:64},one));const more=await one();console.log(first.filter(([,t])=>t.startsWith("OK ")).length);console.log(more[1]);for(const [s] of [...first,more])s.destroy();})();`;
    const got = await h.sh("net", `node -e '${script}'`);
    const [opened, refused] = got.stdout.trim().split("\n");
    expect(opened, got.stderr).toBe("64");
    expect(refused).toMatch(/^NO egress\.limit /);
    expect(await refusalRecorded("egress.limit", "allowed.test")).toBe(true);
  });

  // Found by an audit: the 64-connection bound was checked only once a header came, so
  // connections that never send one (each a descriptor of the daemon's, for up to 10 s) were
  // not bounded at all. Now a new connection past 64 + 8 is closed at accept, and refused on record.
  it("bounds a seat's silent connections: past 72 that send nothing, a new one is closed at once, refused on record", async () => {
    const script = `const net=require("net");const all=[];let closed=0;for(let i=0;i<150;i++){const s=net.connect("/run/teamd/egress.sock");s.on("error",()=>{});s.on("close",()=>closed++);all.push(s);}setTimeout(()=>{console.log(all.length-closed);for(const s of all)s.destroy();},2000);`;
    const got = await h.sh("net", `node -e '${script}'`);
    const open = Number(got.stdout.trim());
    // Held open after 2 s (under the 10 s header timeout): the daemon's own bound, not the seat's.
    expect(open, got.stderr).toBeLessThanOrEqual(72);
    // Control: the bound is not lower than the 64 connections a seat may have open.
    expect(open, got.stderr).toBeGreaterThanOrEqual(64);
    const dropped = () => payloads().filter((p) => p.includes("egress.limit") && p.includes("open or opening")).length;
    expect(await waitFor(() => dropped() >= 150 - 72, 10_000)).toBe(true);
  });

  it("runs the seat's command under the launcher with its exit status and signal death unchanged", async () => {
    for (const seat of ["net", "dark"]) {
      expect((await h.sh(seat, "exit 7")).code).toBe(7);
      expect((await h.sh(seat, "kill -TERM $$")).code).toBe(143);
    }
    // The launcher is the command's parent in the seat with egress, and absent in the other.
    expect((await h.sh("net", "cat /proc/$PPID/cmdline | tr '\\0' ' '")).stdout).toContain("/run/teamd/egress.mjs");
    expect((await h.sh("dark", "cat /proc/$PPID/cmdline | tr '\\0' ' '")).stdout).not.toContain("/run/teamd/egress.mjs");
  });

  it("finds no route out for a connection that ignores the proxy", async () => {
    // The control: the server is there, on the host's loopback.
    const host = await promisify(execFile)("curl", ["-sS", "--max-time", "5", "--noproxy", "*", `http://127.0.0.1:${httpPort}/host-control`], {
      encoding: "utf8",
    });
    expect(host.stdout).toContain("hello");
    const direct = await h.sh("net", `curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:${httpPort}/bypass 2>&1; echo exit=$?`);
    expect(direct.stdout).not.toContain("exit=0");
    expect(reached("/bypass")).toBe(false);
    const out = await h.sh("net", `curl -sS --max-time 5 --noproxy '*' http://192.0.2.1/ 2>&1; echo exit=$?`);
    expect(out.stdout).not.toContain("exit=0");
    expect(out.stdout).toMatch(/unreachable|Couldn't connect|Failed to connect/i);
    // A seat that declares no egress has no proxy either: nothing to ask.
    const dark = await h.sh("dark", `curl -sS --max-time 5 -x http://127.0.0.1:3128 http://allowed.test:${httpPort}/dark 2>&1; echo exit=$?`);
    expect(dark.stdout).not.toContain("exit=0");
    expect(reached("/dark")).toBe(false);
  });
});
