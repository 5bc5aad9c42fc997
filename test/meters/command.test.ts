import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createCommandMeter, type CommandMeterConfig } from "../../src/meters/index.js";
import { at, CANARY, expectNoCanary, meterError, signal } from "./helpers.js";

const WINDOW = { from: at("2026-11-01T00:00:00"), to: at("2026-11-02T06:30:00") };

/** Whether a pid names no live process (gone, or a zombie its parent has not reaped yet). */
function gone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH";
  }
  try {
    return /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return true;
  }
}

async function waitGone(pid: number, ms = 3_000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (gone(pid)) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return gone(pid);
}

async function readPid(file: string, ms = 3_000): Promise<number> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (existsSync(file)) {
      const text = readFileSync(file, "utf8").trim();
      if (/^\d+$/.test(text)) return Number(text);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`no pid in ${file}`);
}

describe("the command meter: the owner's program, argv without a shell, bounded in time and output, stopped by its pid", () => {
  let dir: string;
  const script = (name: string, body: string): string => {
    const path = join(dir, name);
    writeFileSync(path, `#!/bin/sh\n${body}\n`);
    chmodSync(path, 0o755);
    return path;
  };
  const config = (command: string[]): CommandMeterConfig => ({ kind: "command", name: "local", team: "proj", lab: "google", everyMs: 60_000, command });
  const daemonEnv = { PATH: process.env.PATH, HOME: tmpdir(), TEAMD_ANTHROPIC_ADMIN_KEY: CANARY, SECRET_TOKEN: CANARY };

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "teamd-meters-command-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("reads {amount, currency} in the major unit and {amountMinor} in the minor unit; the window is in its environment and no daemon key is", async () => {
    const env = join(dir, "env.txt");
    const good = script("good.sh", `env > '${env}'\nprintf '{"amount": "%s", "currency": "usd"}\\n' "$1"`);
    const meter = createCommandMeter(config([good, "12.34"]), { env: daemonEnv });
    expect(await meter.read(WINDOW, signal())).toEqual({ amount: 1234, currency: "USD", from: WINDOW.from, to: WINDOW.to });
    const seen = readFileSync(env, "utf8");
    expect(seen).toContain("TEAMD_METER_FROM=2026-11-01T00:00:00Z\n");
    expect(seen).toContain("TEAMD_METER_TO=2026-11-02T06:30:00Z\n");
    expect(seen).toContain("TEAMD_METER_TEAM=proj\n");
    expect(seen).toContain("TEAMD_METER_LAB=google\n");
    expect(seen).not.toContain(CANARY);
    expect(seen).not.toContain("TEAMD_ANTHROPIC_ADMIN_KEY");

    // More digits than cents are rounded up; a currency without minor units is shifted by none.
    expect((await createCommandMeter(config([good, "0.001"])).read(WINDOW, signal())).amount).toBe(1);
    const yen = script("yen.sh", `echo '{"amount": "1500", "currency": "JPY"}'`);
    expect(await createCommandMeter(config([yen])).read(WINDOW, signal())).toMatchObject({ amount: 1500, currency: "JPY" });
    const minor = script("minor.sh", `echo '{"amountMinor": 987, "currency": "USD"}'`);
    expect((await createCommandMeter(config([minor])).read(WINDOW, signal())).amount).toBe(987);
  });

  it("anything else is a MeterError naming what was wrong, quoting only a short escaped excerpt", async () => {
    const cases: [string, RegExp][] = [
      [`printf 'not json \\033[31m red %s' "$(head -c 500 /dev/zero | tr '\\0' x)"`, /did not print JSON \(it printed "not json \\u001b\[31m red x+"…\)/],
      [`echo '[1, 2]'`, /not an object/],
      [`echo '{"amount": "1.00", "currency": "USD", "note": "hi"}'`, /unknown field "note"/],
      [`echo '{"amount": "1.00", "amountMinor": 100, "currency": "USD"}'`, /exactly one of 'amount'/],
      [`echo '{"currency": "USD"}'`, /exactly one of 'amount'/],
      [`echo '{"amount": 12.34, "currency": "USD"}'`, /'amount' must be a decimal string .*JSON number/],
      [`echo '{"amount": "12,34", "currency": "USD"}'`, /'amount' must be a decimal string/],
      [`echo '{"amount": "-1", "currency": "USD"}'`, /negative/],
      [`echo '{"amountMinor": 1.5, "currency": "USD"}'`, /'amountMinor' must be a whole number/],
      [`echo '{"amountMinor": 100, "currency": "dollars"}'`, /ISO 4217/],
      [`echo '{"amountMinor": 100}'`, /ISO 4217/],
      [`true`, /printed nothing/],
      [`echo "no credit for you" >&2; exit 3`, /exited 3 \(its last error line: "no credit for you"\)/],
    ];
    for (const [i, [body, pattern]] of cases.entries()) {
      const error = await meterError(createCommandMeter(config([script(`bad-${i}.sh`, body)])).read(WINDOW, signal()));
      expect(error.message, body).toMatch(pattern);
      expect(error.message.length, body).toBeLessThan(400);
    }
    const missing = await meterError(createCommandMeter(config([join(dir, "no-such-program")])).read(WINDOW, signal()));
    expect(missing.message).toMatch(/no such program/);
  });

  it("output past the bound stops the command: its process group is killed and the read fails", async () => {
    const pidFile = join(dir, "flood.pid");
    const flood = script("flood.sh", `echo $$ > '${pidFile}'\nwhile :; do echo xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done`);
    const error = await meterError(createCommandMeter(config([flood]), { maxOutputBytes: 4096 }).read(WINDOW, signal()));
    expect(error.message).toMatch(/printed more than 4096 bytes/);
    expect(await waitGone(await readPid(pidFile))).toBe(true);
  });

  it("a hang is killed at the timeout, with the children it started: both pids are gone", async () => {
    const pidFile = join(dir, "hang.pid");
    const childFile = join(dir, "hang-child.pid");
    const hang = script("hang.sh", `echo $$ > '${pidFile}'\nsleep 60 &\necho $! > '${childFile}'\nwait`);
    const started = Date.now();
    const error = await meterError(createCommandMeter(config([hang]), { timeoutMs: 1_000 }).read(WINDOW, signal()));
    const pid = await readPid(pidFile);
    expect(error.message).toMatch(new RegExp(`did not finish within 1 s; teamd killed its process group \\(pid ${pid}\\)`));
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(gone(pid)).toBe(true); // the read settles only once the command has exited
    expect(await waitGone(await readPid(childFile))).toBe(true);
  });

  it("a cancelled read stops the command the same way", async () => {
    const pidFile = join(dir, "cancel.pid");
    const hang = script("cancel.sh", `echo $$ > '${pidFile}'\nexec sleep 60`);
    const controller = new AbortController();
    const reading = createCommandMeter(config([hang])).read(WINDOW, controller.signal);
    const pid = await readPid(pidFile);
    controller.abort();
    expect((await meterError(reading)).message).toMatch(/cancelled/);
    expect(await waitGone(pid)).toBe(true);
  });

  it("the canary of the daemon's environment reaches no error either", async () => {
    // What it prints on stderr is quoted (an excerpt): had the key been passed, it would show here.
    const leak = script("leak.sh", `echo "key=[$TEAMD_ANTHROPIC_ADMIN_KEY$SECRET_TOKEN]" >&2; exit 1`);
    const error = await meterError(createCommandMeter(config([leak]), { env: daemonEnv }).read(WINDOW, signal()));
    expect(error.message).toContain('"key=[]"');
    expectNoCanary(error);
  });
});
