import { get } from "node:http";
import { connect } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { appliedTeam } from "../support/applied-team.js";
import { forwardRuns } from "../support/forward-cli.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import type { TeamdHarness } from "../support/teamd-harness.js";
import { waitFor } from "../support/wait.js";

/**
 * `teamd forward SEAT PORT` (issue 23: a login's callback on the seat's loopback), through a
 * real daemon and a real bwrap seat: a server the seat runs on its own loopback (its own
 * network namespace, which nothing on the host can reach) answers a request made on the host
 * to the port `teamd forward` opens, carried through the seat's launcher; each connection is
 * recorded (seat.forward with the port, seat.forward-end with the bytes each way); a second
 * connection while one is open is closed; the port closes when the command ends; a port where
 * nothing listens in the seat, a seat without start.network and a stopped seat are refused.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const SERVER = [
  "require('http').createServer((q, s) => { if (q.url.startsWith('/slow')) return setTimeout(() => s.end('slow done'), 1500);",
  "s.end('callback ' + q.url + ' answered in the seat'); }).listen(1455, '127.0.0.1', () => console.log('listening'));",
  // A listener that never reads: what the owner's side sends it must not pile up in the daemon.
  "require('net').createServer((c) => c.pause()).listen(1456, '127.0.0.1');",
].join(" ");

interface Rec {
  type: string;
  action: string;
  fields?: Record<string, string>;
}

describe.runIf(process.platform === "linux")("teamd forward", () => {
  let h: TeamdHarness;
  const runs = forwardRuns(() => h);

  beforeAll(async () => {
    h = await appliedTeam(
      "teamd-forward-",
      teamFile(`  web:
    lab: anthropic
    roles: [observer]
    start:
      command: [node, -e, ${JSON.stringify(SERVER)}]
      network: { lab: false }
  plain:
    lab: anthropic
    roles: [observer]
    start:
      command: [sleep, "3600"]
`),
    );
    await h.ok(["start", "--team", "proj"]);
  }, 90_000);
  afterEach(() => runs.stopAll());
  afterAll(async () => {
    await h?.cleanup();
  });

  const forward = (args: string[]) => runs.start(args);
  const fetchText = (port: number, path: string) =>
    new Promise<string>((resolve, reject) => {
      const req = get({ host: "127.0.0.1", port, path, agent: false, timeout: 10_000 }, (res) => {
        let body = "";
        res.setEncoding("utf8").on("data", (d: string) => (body += d));
        res.on("end", () => resolve(body));
        res.on("error", reject);
      });
      req.on("error", reject);
      req.on("timeout", () => req.destroy(new Error("timeout")));
    });

  it("a request on the host reaches the seat's loopback server, and each connection is on record with its bytes", async () => {
    // Control: the seat's server is not reachable from the host as it is (its own network namespace).
    await expect(fetchText(1455, "/direct")).rejects.toThrow();
    const f = await forward(["web", "1455", "--local", "0"]);
    expect(f.port).toBeGreaterThan(0);
    expect(await fetchText(f.port, "/auth/callback?code=abc")).toBe("callback /auth/callback?code=abc answered in the seat");
    // One connection at a time: the next once the first is done.
    expect(await waitFor(() => f.stderr().includes("connection 1:"), 10_000), f.stderr()).toBe(true);
    expect(await fetchText(f.port, "/second")).toBe("callback /second answered in the seat");
    expect(await waitFor(async () => (await h.records<Rec>("--seat", "web")).filter((r) => r.action === "seat.forward-end").length >= 2, 10_000)).toBe(true);
    const records = await h.records<Rec>("--seat", "web");
    const opens = records.filter((r) => r.action === "seat.forward");
    expect(opens.length).toBe(2);
    expect(opens[0]?.fields).toMatchObject({ by: "owner", port: "1455" });
    const ends = records.filter((r) => r.action === "seat.forward-end");
    for (const end of ends) {
      expect(Number(end.fields?.up_bytes)).toBeGreaterThan(0);
      expect(Number(end.fields?.down_bytes)).toBeGreaterThan(0);
    }
    expect(f.stderr()).toMatch(/any local user can connect/);
    // It ends with Ctrl-C, and the port closes with it.
    f.child.kill("SIGINT");
    expect(await f.exit).toBe(0);
    const refused = await new Promise<string>((resolve) => {
      const s = connect(f.port, "127.0.0.1");
      s.once("connect", () => (s.destroy(), resolve("connected")));
      s.once("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? "error"));
    });
    expect(refused).toBe("ECONNREFUSED");
  });

  it("one connection at a time: a second while the first is open is closed", async () => {
    const f = await forward(["web", "1455", "--local", "0"]);
    const slow = fetchText(f.port, "/slow");
    await new Promise((r) => setTimeout(r, 300));
    await expect(fetchText(f.port, "/meanwhile")).rejects.toThrow();
    expect(await slow).toBe("slow done");
    expect(await waitFor(() => /connection 1: /.test(f.stderr()), 10_000), f.stderr()).toBe(true);
    expect(await fetchText(f.port, "/after")).toBe("callback /after answered in the seat");
  });

  it("a seat that never reads what the owner's side sends: the connection ends past 4 MiB unread, nothing piles up", async () => {
    const f = await forward(["web", "1456", "--local", "0"]);
    const sent = await new Promise<{ wrote: number; how: string }>((resolve) => {
      const s = connect(f.port, "127.0.0.1");
      let wrote = 0;
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      const pump = () => {
        while (wrote < 64 * 1024 * 1024 && s.write(chunk)) wrote += chunk.length;
        if (wrote < 64 * 1024 * 1024) s.once("drain", () => ((wrote += chunk.length), pump()));
      };
      s.once("connect", pump);
      s.resume();
      s.once("close", () => resolve({ wrote, how: "closed" }));
      s.on("error", () => undefined);
      setTimeout(() => (s.destroy(), resolve({ wrote, how: "timeout" })), 30_000);
    });
    expect(sent.how).toBe("closed");
    expect(sent.wrote).toBeLessThan(64 * 1024 * 1024);
    expect(await waitFor(() => /connection 1: closed: the seat left 4 MiB the owner's side sent unread/.test(f.stderr()), 10_000), f.stderr()).toBe(true);
    const end = (await h.records<Rec>("--seat", "web")).filter((r) => r.action === "seat.forward-end").at(-1);
    expect(end?.fields?.how).toMatch(/the seat left 4 MiB/);
    expect(Number(end?.fields?.up_bytes)).toBeLessThanOrEqual(8 * 1024 * 1024);
    // The daemon answers on: the next connection is served.
    const g = await forward(["web", "1455", "--local", "0"]);
    expect(await fetchText(g.port, "/after-flood")).toBe("callback /after-flood answered in the seat");
  }, 60_000);

  it("refused: a port where nothing listens in the seat, a seat without start.network, a stopped seat, a bad port", async () => {
    const f = await forward(["web", "9", "--local", "0"]);
    await expect(fetchText(f.port, "/nothing")).rejects.toThrow();
    expect(await waitFor(() => /could not be reached|nothing answered/.test(f.stderr()), 10_000), f.stderr()).toBe(true);
    const ends = (await h.records<Rec>("--seat", "web")).filter((r) => r.action === "seat.forward-end");
    expect(ends.some((r) => /not opened: nothing answered on that port in the seat \(ECONNREFUSED\)/.test(r.fields?.how ?? ""))).toBe(true);
    const plain = await forward(["plain", "1455", "--local", "0"]);
    await expect(fetchText(plain.port, "/x")).rejects.toThrow();
    expect(await waitFor(() => /seat\.forward .*start\.network/.test(plain.stderr()), 10_000), plain.stderr()).toBe(true);
    await h.ok(["stop", "plain"]);
    const stopped = await forward(["plain", "1455", "--local", "0"]);
    await expect(fetchText(stopped.port, "/x")).rejects.toThrow();
    expect(await waitFor(() => /seat\.not-running/.test(stopped.stderr()), 10_000), stopped.stderr()).toBe(true);
    expect((await h.run(["forward", "web", "99999"])).code).toBe(2);
  });
});
