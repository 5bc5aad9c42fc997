import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { appliedTeam } from "../support/applied-team.js";
import { cliTerminals } from "../support/cli-terminal.js";
import { filesUnder } from "../support/files-under.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import type { TeamdHarness } from "../support/teamd-harness.js";

/**
 * The two login paths docs/agents.md gives (issue 23, item 1), against a stand-in: a login that
 * prints a URL for the owner's browser, reads the code pasted back, exchanges it for a token at
 * a token endpoint (a loopback server reached through the seat's egress proxy, declared in its
 * allowlist) and keeps the token in the seat's home — the shape of Claude Code's, Codex's and
 * Gemini CLI's logins by code. Run once by `teamd exec -it` (a terminal of its own, while the
 * seat runs) and once by attaching to a seat whose first start shows the login (attach and
 * paste). Each completes: the code reached the token endpoint, the token is in the seat's home
 * and in no record or run log (the typed code is echoed by the pty, so it may be in the run's
 * log: docs/agents.md says so).
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const LOGIN = [
  "printf 'Open http://login.test/authorize?client=standin in your browser.\\n'",
  "printf 'Paste the code here: '",
  "read code",
  'token=$(curl -sS --max-time 10 -X POST -d "code=$code" "http://$TOKEN_HOST/oauth/token") || { echo "token exchange failed"; exit 1; }',
  'umask 077; mkdir -p ~/.standin; printf %s "$token" > ~/.standin/credentials',
  'echo "Logged in as $(printf %s "$token" | cut -c1-6)..."',
].join("\n");

describe.runIf(process.platform === "linux")("an agent's login in a seat, against a stand-in", () => {
  let h: TeamdHarness;
  let server: Server;
  const codes: string[] = [];
  const token = (code: string) => `tok-${code}-secret-token-canary-7c2d`;
  const terminals = cliTerminals(() => h);
  afterEach(() => terminals.closeAll());

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = "";
      req.on("data", (d: Buffer) => (body += d.toString("utf8")));
      req.on("end", () => {
        const code = new URLSearchParams(body).get("code") ?? "";
        codes.push(code);
        res.end(req.method === "POST" && req.url === "/oauth/token" && /^[a-z0-9-]+$/.test(code) ? token(code) : "");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;
    const network = `      env: { TOKEN_HOST: "token.test:${port}" }
      network:
        lab: false
        allow: ["token.test:${port}"]
        private: ["127.0.0.1/32"]
`;
    h = await appliedTeam(
      "teamd-login-",
      teamFile(`  runner:
    lab: anthropic
    roles: [observer]
    start:
      command: [sleep, "3600"]
${network}  firstrun:
    lab: anthropic
    roles: [observer]
    start:
      command: [sh, -c, 'sh ./login.sh; echo "agent ready"; exec sleep 3600']
${network}`),
      { "login.sh": `${LOGIN}\n` },
      { daemonEnv: { TEAMD_TEST_EGRESS_HOSTS: JSON.stringify({ "token.test": "127.0.0.1" }) } },
    );
    await h.ok(["start", "runner"]);
  }, 90_000);
  afterAll(async () => {
    await h?.cleanup();
    await new Promise<void>((resolve) => server?.close(() => resolve()));
  });

  const noTokenAnywhere = (code: string) => {
    for (const file of [...filesUnder(join(h.home, "ledger")), ...filesUnder(join(h.home, "logs"))])
      expect(readFileSync(file).toString("latin1"), file).not.toContain(token(code));
  };

  it("teamd exec -it SEAT -- <login>: the URL shown, the code pasted, the token kept in the seat's home", async () => {
    const t = terminals.open(["exec", "-it", "runner@proj", "--", "sh", "./login.sh"]);
    await t.waitFor("Paste the code here: ", 20_000);
    expect(t.output()).toContain("http://login.test/authorize?client=standin");
    t.write("code-by-exec\r");
    await t.waitFor("Logged in as tok-co...", 20_000);
    expect(await t.exit).toBe(0);
    expect(codes).toContain("code-by-exec");
    const kept = await h.sh("runner", "cat ~/.standin/credentials");
    expect(kept.stdout).toBe(token("code-by-exec"));
    noTokenAnywhere("code-by-exec");
  });

  it("attach and paste: a seat whose first start shows its login, answered through teamd attach", async () => {
    await h.ok(["start", "firstrun"]);
    const t = terminals.open(["attach", "firstrun@proj"]);
    await t.waitFor("Paste the code here: ", 20_000);
    t.write("code-by-attach\r");
    await t.waitFor("agent ready", 20_000);
    expect(t.output()).toContain("Logged in as tok-co...");
    expect(codes).toContain("code-by-attach");
    expect((await h.sh("firstrun", "cat ~/.standin/credentials")).stdout).toBe(token("code-by-attach"));
    // The other seat's home is its own.
    expect((await h.sh("runner", "cat ~/.standin/credentials")).stdout).toBe(token("code-by-exec"));
    noTokenAnywhere("code-by-attach");
  });
});
