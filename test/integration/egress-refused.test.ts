import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { createHarness, type TeamdHarness } from "../support/teamd-harness.js";
import type { DaemonProcess } from "../support/programs.js";

/**
 * `teamd egress refused` and `teamd log`'s detail (issue 23, items 2 and 3), through a real
 * daemon, real bwrap seats and a loopback server the seats reach through their proxies: a
 * seat's refused hosts are listed once each with a count, with the allow line that would cure
 * them; the line, applied, lets the same request through; `teamd log --seat X --type refusal
 * -n 3 --json` gives the rule and the reason; a refusal that no allow line would cure (a name
 * that does not resolve) is listed with its reason and no allow line. Names resolve through
 * TEAMD_TEST_EGRESS_HOSTS only: nothing leaves the machine.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

interface Row {
  team: string;
  seat: string;
  endpoint: string;
  rule: string;
  count: number;
  allow?: string;
  reason: string;
}
interface Rec {
  type: string;
  action: string;
  result: string;
  detail?: { rule?: string; reason?: string };
}

describe.runIf(process.platform === "linux")("teamd egress refused", () => {
  let h: TeamdHarness;
  let server: Server;
  let port = 0;
  let daemon: DaemonProcess | undefined;
  const file = (allow: string[]) =>
    teamFile(`  agent:
    lab: anthropic
    roles: [observer]
    start:
      command: [sleep, "3600"]
      network:
        lab: false
        allow: ${JSON.stringify(allow)}
        private: ["127.0.0.1/32"]
  quiet:
    lab: anthropic
    roles: [observer]
    start:
      command: [sleep, "3600"]
      network: { lab: false }
`);

  beforeAll(async () => {
    server = createServer((_req, res) => res.end("telemetry accepted\n"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
    h = await createHarness("teamd-egress-refused-");
    daemon = await h.startDaemon({ env: { TEAMD_TEST_EGRESS_HOSTS: JSON.stringify({ "telemetry.test": "127.0.0.1", "updates.test": "127.0.0.1" }) } });
    await h.ok(["init", "--yes", "--json"]);
    writeFileSync(join(h.repo, "teamd.yaml"), file([]));
    await h.ok(["apply", "--yes"]);
    await h.ok(["start", "--team", "proj"]);
  }, 90_000);
  afterAll(async () => {
    await h?.cleanup();
    await new Promise<void>((resolve) => server?.close(() => resolve()));
  });

  // 30 s: under a loaded machine the daemon's answer (after its refusal is on record) may be slow.
  const curl = (seat: string, url: string) => h.sh(seat, `curl -sS --max-time 30 ${url} 2>&1; echo "exit $?"`);

  it("lists each refused host once with its count and the allow line that would cure it", async () => {
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) seen.push((await curl("agent", `http://telemetry.test:${port}/v1/events`)).stdout);
    seen.push((await curl("agent", `http://updates.test:${port}/latest`)).stdout);
    seen.push((await curl("agent", "http://nowhere.test:80/")).stdout);
    seen.push((await curl("quiet", `http://telemetry.test:${port}/v1/events`)).stdout);
    const rows = (await h.ok(["egress", "refused", "agent", "--json"]))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Row);
    // What each curl saw, should a row be missing (one was, once, on a loaded machine).
    const why = JSON.stringify({ seen, rows, daemon: String(daemon?.stderr() ?? "").slice(-3000) });
    const telemetry = rows.find((r) => r.endpoint === `telemetry.test:${port}`);
    expect(telemetry, why).toMatchObject({ seat: "agent", team: "proj", rule: "egress.host", count: 3, allow: `telemetry.test:${port}` });
    expect(rows.find((r) => r.endpoint === `updates.test:${port}`)?.count, why).toBe(1);
    // nowhere.test is not allowed either: the first thing refused is the allowlist, so it gets a line too.
    expect(rows.find((r) => r.endpoint === "nowhere.test:80")?.allow).toBe("nowhere.test:80");
    // Only the named seat's.
    expect(rows.every((r) => r.seat === "agent")).toBe(true);
    const all = (await h.ok(["egress", "refused", "--json"])).trim().split("\n");
    expect(all.some((l) => (JSON.parse(l) as Row).seat === "quiet")).toBe(true);
    const table = await h.ok(["egress", "refused", "agent"]);
    expect(table).toMatch(new RegExp(`agent@proj +3  telemetry\\.test:${port} +egress\\.host`));
    expect(table).toContain(`allow: ["telemetry.test:${port}", "nowhere.test:80", "updates.test:${port}"]`);
    expect(await h.ok(["egress", "refused", "agent", "--since", "2099-01-01T00:00:00Z"])).toMatch(/no egress was refused/);
  });

  it("teamd log --seat X --type refusal -n 3 --json gives each refusal's rule and reason", async () => {
    const out = (await h.ok(["log", "--seat", "agent", "--type", "refusal", "-n", "3", "--json"])).trim().split("\n");
    expect(out).toHaveLength(3);
    const records = out.map((l) => JSON.parse(l) as Rec);
    for (const r of records) {
      expect(r.type).toBe("refusal");
      expect(r.detail?.rule).toBe("egress.host");
      expect(r.detail?.reason).toMatch(/is not in this seat's egress allowlist/);
    }
    const table = await h.ok(["log", "--seat", "agent", "--type", "refusal", "-n", "1"]);
    expect(table).toMatch(/egress\.host  .*is not in this seat's egress allowlist/);
    // The other seat's refusal is not this seat's.
    expect(await h.ok(["log", "--seat", "quiet", "--type", "refusal", "--json"])).not.toContain("seat:proj/agent");
  });

  it("the allow line, applied, lets the same request through; a name that does not resolve is then listed with its reason", async () => {
    await h.ok(["stop", "agent"]);
    writeFileSync(join(h.repo, "teamd.yaml"), file([`telemetry.test:${port}`, "nowhere.test:80"]));
    await h.ok(["apply", "--yes"]);
    await h.ok(["start", "agent"]);
    const through = await curl("agent", `http://telemetry.test:${port}/v1/events`);
    expect(through.stdout).toContain("telemetry accepted");
    const unresolvedCurl = await curl("agent", "http://nowhere.test:80/");
    const rows = (await h.ok(["egress", "refused", "agent", "--json", "--since", "2m"]))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Row);
    const unresolved = rows.find((r) => r.endpoint === "nowhere.test:80" && r.rule === "egress.resolve");
    // What the seat saw and what was listed, should the row be missing (it was, once, in CI).
    expect(unresolved, JSON.stringify({ curl: unresolvedCurl, rows, daemon: String(daemon?.stderr() ?? "").slice(-3000) })).toBeDefined();
    expect(unresolved?.reason).toMatch(/did not resolve \(ENOTFOUND\)/);
    expect(unresolved?.allow).toBeUndefined();
    const table = await h.ok(["egress", "refused", "agent", "--since", "2m"]);
    expect(table).toMatch(/Not a missing allow line[\s\S]*nowhere\.test:80: nowhere\.test did not resolve/);
  });
});
