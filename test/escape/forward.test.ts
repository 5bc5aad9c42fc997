import { connect } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { appliedTeam } from "../support/applied-team.js";
import { forwardRuns } from "../support/forward-cli.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import type { TeamdHarness } from "../support/teamd-harness.js";
import { waitFor } from "../support/wait.js";

/**
 * The hostile seat against `teamd forward` (src/effects/forward-hub.ts, shim/forward.ts,
 * daemon/lifecycle/manager.ts forward), written by an attacker told only what a seat reaches.
 * Each test asserts the safe behaviour; four failed on the first build and were fixed: the
 * seat closing its side left the owner's connection hanging (the daemon's socket is half-open
 * and only its close was watched), and the record counted the launcher's header as the seat's
 * bytes; an owner that half-closed (a request, then FIN) lost the seat's answer (its end was
 * taken for a detach); a seat that stopped left a forwarded connection open (the hub did not
 * track its live connections); the daemon's cut of a seat that never reads was recorded as
 * "closed by the seat", with bytes still in the daemon's buffer counted as sent. Held: another
 * control connection, a made-up or guessed FORWARD-DATA id, a FORWARD-FAIL carrying escapes
 * and 50 bogus connections change nothing, and the next forward works.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const SERVER = [
  "const net = require('net');",
  // 2001: five bytes, then the seat's side closes (an HTTP/1.0-style server).
  "net.createServer((s) => { s.on('error', () => {}); s.end('hello'); }).listen(2001, '127.0.0.1');",
  // 2002: answers once the owner's side has finished sending (half-close), as TCP allows.
  "net.createServer({ allowHalfOpen: true }, (s) => { s.on('error', () => {}); s.on('data', () => {}); s.on('end', () => setTimeout(() => s.end('pong'), 500)); }).listen(2002, '127.0.0.1');",
  // 2003: one byte, then holds the connection open.
  "net.createServer((s) => { s.on('error', () => {}); s.write('x'); }).listen(2003, '127.0.0.1', () => console.log('listening'));",
  "setInterval(() => {}, 1e9);",
].join(" ");

interface Rec {
  type: string;
  action: string;
  fields?: Record<string, string>;
}

interface Raw {
  data: string;
  ended: boolean;
}

/** A raw owner-side client: optionally writes, optionally half-closes, collects until EOF or the timeout. */
function raw(port: number, opts: { send?: string; halfClose?: boolean; timeoutMs: number }): Promise<Raw> {
  return new Promise((resolve) => {
    const s = connect({ port, host: "127.0.0.1", allowHalfOpen: true });
    let data = "";
    let done = false;
    const finish = (ended: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      resolve({ data, ended });
    };
    const timer = setTimeout(() => finish(false), opts.timeoutMs);
    s.setEncoding("latin1");
    s.on("data", (d: string) => (data += d));
    s.on("end", () => finish(true));
    s.on("error", () => finish(true));
    s.once("connect", () => {
      if (opts.send !== undefined) s.write(opts.send);
      if (opts.halfClose === true) s.end();
    });
  });
}

describe.runIf(process.platform === "linux")("escape: teamd forward", () => {
  let h: TeamdHarness;
  const runs = forwardRuns(() => h);

  beforeAll(async () => {
    h = await appliedTeam(
      "teamd-esc-forward-",
      teamFile(`  evil:
    lab: anthropic
    roles: [observer]
    start:
      command: [node, -e, ${JSON.stringify(SERVER)}]
      network: { lab: false }
  hold:
    lab: anthropic
    roles: [observer]
    start:
      command: [node, -e, ${JSON.stringify(SERVER)}]
      network: { lab: false }
`),
    );
    await h.ok(["start", "--team", "proj"]);
    // The servers are up in the seat.
    await new Promise((r) => setTimeout(r, 1500));
  }, 90_000);
  afterEach(() => runs.stopAll());
  afterAll(async () => {
    await h?.cleanup();
  });

  const forward = (args: string[]) => runs.start(args);

  it("the seat closing its side ends the owner's connection (no hang), and the record's down_bytes is the seat's bytes, not the header's", async () => {
    const f = await forward(["evil", "2001", "--local", "0"]);
    const got = await raw(f.port, { timeoutMs: 8_000 });
    expect(got.data).toBe("hello");
    // The seat said all it had and closed: the owner must see the end.
    const ended = got.ended;
    expect(
      await waitFor(async () => (await h.records<Rec>("--seat", "evil")).some((r) => r.action === "seat.forward-end" && r.fields?.port === "2001"), 10_000),
    ).toBe(true);
    const end = (await h.records<Rec>("--seat", "evil")).filter((r) => r.action === "seat.forward-end" && r.fields?.port === "2001").at(-1);
    expect(end?.fields?.down_bytes, JSON.stringify(end?.fields)).toBe("5");
    expect(ended, `owner never saw EOF after the seat closed; stderr: ${f.stderr()}`).toBe(true);
  }, 45_000);

  it("the owner half-closing (a request then FIN) still gets the seat's answer", async () => {
    const f = await forward(["evil", "2002", "--local", "0"]);
    const got = await raw(f.port, { send: "ping", halfClose: true, timeoutMs: 8_000 });
    expect(got.data, `stderr: ${f.stderr()}`).toBe("pong");
  }, 30_000);

  it("the seat's own processes cannot take the control over, and bogus FORWARD-* connections change nothing", async () => {
    const attack = [
      "const net = require('net'); let n = 0; const out = [];",
      "const one = (line) => new Promise((res) => { const s = net.connect('/run/teamd/egress.sock'); let got = ''; s.on('data', (d) => got += d); s.on('error', () => {}); s.on('close', () => res(got)); s.write(line); setTimeout(() => { s.destroy(); res('open:' + got); }, 1500); });",
      "(async () => {",
      "  out.push('control=' + await one('FORWARD-CONTROL\\n'));",
      "  out.push('data=' + await one('FORWARD-DATA 00000000-0000-0000-0000-000000000000\\nGET /'));",
      "  out.push('fail=' + await one('FORWARD-FAIL 00000000-0000-0000-0000-000000000000 \\x1b[2J\\n'));",
      "  await Promise.all(Array.from({ length: 50 }, () => one('FORWARD-DATA ' + 'a'.repeat(64) + '\\n')));",
      "  console.log(out.join('|'));",
      "})();",
    ].join(" ");
    const r = await h.sh("evil", `node -e ${JSON.stringify(attack)}`);
    // A second control while the launcher's lives is closed at once (not left "open:" for 1.5 s).
    expect(r.stdout, r.stderr).toMatch(/control=(?!open:)/);
    expect(r.stdout).toMatch(/data=(?!open:)/);
    // The launcher's forward still works after all that.
    const f = await forward(["evil", "2001", "--local", "0"]);
    const got = await raw(f.port, { timeoutMs: 8_000 });
    expect(got.data).toBe("hello");
  }, 45_000);

  it("a seat that never reads: the daemon's cut is recorded as the daemon's, and up_bytes counts only what reached the seat", async () => {
    const f = await forward(["evil", "2003", "--local", "0"]);
    const total = 16 * 1024 * 1024;
    const got = await new Promise<{ ended: boolean; data: string }>((resolve) => {
      const s = connect({ port: f.port, host: "127.0.0.1" });
      let data = "";
      const timer = setTimeout(() => (s.destroy(), resolve({ ended: false, data })), 5_000);
      s.setEncoding("latin1").on("data", (d: string) => (data += d));
      s.on("close", () => (clearTimeout(timer), resolve({ ended: true, data })));
      s.on("error", () => undefined);
      s.once("connect", () => s.write(Buffer.alloc(total, 0x61)));
    });
    void got;
    await waitFor(async () => (await h.records<Rec>("--seat", "evil")).some((r) => r.action === "seat.forward-end" && r.fields?.port === "2003"), 10_000);
    const end = (await h.records<Rec>("--seat", "evil")).filter((r) => r.action === "seat.forward-end" && r.fields?.port === "2003").at(-1);
    expect(end?.fields?.how ?? "", JSON.stringify(end?.fields)).not.toMatch(/closed by the seat/);
    expect(Number(end?.fields?.up_bytes)).toBeLessThan(total);
  }, 50_000);

  it("a seat that stops while a forwarded connection is open: the owner's connection ends", async () => {
    const f = await forward(["hold", "2003", "--local", "0"]);
    const pending = raw(f.port, { timeoutMs: 20_000 });
    await new Promise((r) => setTimeout(r, 1500));
    await h.ok(["stop", "hold"]);
    const got = await pending;
    expect(got.data).toBe("x");
    expect(got.ended, `owner's connection still open 20 s after the seat stopped; stderr: ${f.stderr()}`).toBe(true);
  }, 50_000);
});
