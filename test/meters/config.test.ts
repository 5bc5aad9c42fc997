import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { chmodSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inspect } from "node:util";
import { loadMeters, meterSecrets, metersPath, type MeterConfig, type MeterCredential, type MetersLoad } from "../../src/meters/index.js";
import { CANARY } from "./helpers.js";

const ENV_KEY = "sk-ant-admin01-envcanary-6a1f0c9d2e";

/** The owner's example (docs): one meter of each kind. */
const EXAMPLE = {
  meters: {
    "claude-ws": { kind: "anthropic-cost", team: "proj", lab: "anthropic", workspace: "wrkspc_01AbC", keyEnv: "TEAMD_ANTHROPIC_ADMIN_KEY", every: "60s" },
    oai: { kind: "openai-costs", team: "proj", lab: "openai", project: "proj_abc", key: CANARY, every: "5m" },
    local: { kind: "command", team: "proj", lab: "google", command: ["/usr/local/bin/usage", "--json"], every: "60s" },
  },
};

describe("the owner's meter configuration: TEAMD_HOME/meters.json, a 0600 file of the daemon's user, every refusal naming its key and fix", () => {
  let home: string;
  let file: string;
  const uid = process.getuid?.();
  const env = { TEAMD_ANTHROPIC_ADMIN_KEY: ENV_KEY };
  const write = (data: unknown, mode = 0o600) => {
    writeFileSync(file, typeof data === "string" ? data : JSON.stringify(data));
    chmodSync(file, mode);
  };
  /** A refusal's reason, which quotes no key. */
  const refused = (load: MetersLoad): string => {
    expect(load.ok).toBe(false);
    const reason = load.ok ? "" : load.reason;
    expect(reason).not.toContain(CANARY);
    expect(reason).not.toContain(ENV_KEY);
    return reason;
  };
  const withMeter = (over: Record<string, unknown>, drop: string[] = []) => {
    const meter: Record<string, unknown> = { ...EXAMPLE.meters.oai, ...over };
    for (const key of drop) delete meter[key];
    return { meters: { oai: meter } };
  };
  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), "teamd-meters-config-"));
    file = join(home, "meters.json");
  });
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  it("lives at TEAMD_HOME/meters.json unless TEAMD_METERS names an absolute path; a missing file is no meters", async () => {
    expect(metersPath("/h", {})).toBe("/h/meters.json");
    expect(metersPath("/h", { TEAMD_METERS: "/etc/m.json" })).toBe("/etc/m.json");
    expect(refused(await loadMeters(home, { TEAMD_METERS: "m.json" }, uid))).toMatch(/TEAMD_METERS is not an absolute path/);
    expect(await loadMeters(home, {}, uid)).toEqual({ ok: true, meters: [] });
    write(EXAMPLE);
    const elsewhere = join(home, "other.json");
    writeFileSync(elsewhere, JSON.stringify({ meters: {} }), { mode: 0o600 });
    expect(await loadMeters("/nonexistent", { ...env, TEAMD_METERS: elsewhere }, uid)).toEqual({ ok: true, meters: [] });
  });

  it("reads the example: each source mapped to a team and a lab, keys from the file or the daemon's environment, never printed", async () => {
    write(EXAMPLE);
    const load = await loadMeters(home, env, uid);
    if (!load.ok) throw new Error(load.reason);
    const byName = Object.fromEntries(load.meters.map((m) => [m.name, m])) as Record<string, MeterConfig>;
    expect(byName["claude-ws"]).toMatchObject({
      kind: "anthropic-cost",
      team: "proj",
      lab: "anthropic",
      workspace: "wrkspc_01AbC",
      api: "https://api.anthropic.com",
      everyMs: 60_000,
    });
    expect(byName.oai).toMatchObject({ kind: "openai-costs", project: "proj_abc", api: "https://api.openai.com", everyMs: 300_000 });
    expect(byName.local).toMatchObject({ kind: "command", command: ["/usr/local/bin/usage", "--json"], lab: "google" });
    expect(meterSecrets(load.meters).sort()).toEqual([CANARY, ENV_KEY].sort());
    const shown = [JSON.stringify(load.meters), inspect(load.meters, { depth: 9 }), String((byName.oai as { key: MeterCredential }).key)].join("\n");
    expect(shown).not.toContain(CANARY);
    expect(shown).not.toContain(ENV_KEY);
    expect(shown).toContain("[meter key]");
  });

  it("refuses a file that holds a key and is readable by group or other, naming chmod 600; without a key in it, reading is fine", async () => {
    write(EXAMPLE, 0o640);
    expect(refused(await loadMeters(home, env, uid))).toContain(`chmod 600 ${file}`);
    write(EXAMPLE, 0o604);
    expect(refused(await loadMeters(home, env, uid))).toMatch(/holds a meter key and is readable by group or other \(mode 604\)/);
    const keyless = { meters: { "claude-ws": EXAMPLE.meters["claude-ws"], local: EXAMPLE.meters.local } };
    write(keyless, 0o644);
    expect((await loadMeters(home, env, uid)).ok).toBe(true);
  });

  it("refuses a file anyone else can write (it says where keys go and what runs), a symbolic link, another user's file, and invalid JSON unquoted", async () => {
    write({ meters: { local: EXAMPLE.meters.local } }, 0o620);
    expect(refused(await loadMeters(home, env, uid))).toMatch(/writable by group or other \(mode 620\).*chmod 600/);
    write({ meters: { local: EXAMPLE.meters.local } }, 0o602);
    expect(refused(await loadMeters(home, env, uid))).toMatch(/writable by group or other/);
    write(EXAMPLE);
    const link = join(home, "link.json");
    symlinkSync(file, link);
    expect(refused(await loadMeters(home, { ...env, TEAMD_METERS: link }, uid))).toMatch(/symbolic link/);
    expect(refused(await loadMeters(home, env, (uid ?? 0) + 1))).toMatch(/not to the daemon's user.*chown/);
    write(`{ "meters": { "oai": { "key": "${CANARY}" `);
    expect(refused(await loadMeters(home, env, uid))).toMatch(/is not valid JSON$/);
  });

  it("refuses an api over plain http to a host that is not loopback, or carrying credentials; https anywhere and http to loopback are fine", async () => {
    write(withMeter({ api: "http://costs.example.com" }));
    expect(refused(await loadMeters(home, env, uid))).toMatch(/meter 'oai': 'api' must be https \(plain http only to a loopback host\)/);
    write(withMeter({ api: "http://10.0.0.7:8080" }));
    expect(refused(await loadMeters(home, env, uid))).toMatch(/'api' must be https/);
    write(withMeter({ api: `https://proxy.example/?key=${CANARY}` }));
    expect(refused(await loadMeters(home, env, uid))).toMatch(/no credentials, query or fragment/);
    write(withMeter({ api: "not a url" }));
    expect(refused(await loadMeters(home, env, uid))).toMatch(/'api' is not a URL/);
    for (const api of ["https://costs.example.com/", "http://127.0.0.1:4010", "http://localhost:4010/base/"]) {
      write(withMeter({ api }));
      const load = await loadMeters(home, env, uid);
      expect(load.ok && load.meters[0]?.kind === "openai-costs" && load.meters[0].api).toBe(api.replace(/\/+$/, ""));
    }
  });

  it("refuses an unknown kind (with a guess), an unknown setting, and a setting of another kind", async () => {
    write(withMeter({ kind: "openai-cost" }));
    expect(refused(await loadMeters(home, env, uid))).toMatch(
      /meter 'oai': 'kind' must be "anthropic-cost", "openai-costs", "command" \(did you mean "openai-costs"\?\)/,
    );
    write(withMeter({ kind: "gemini" }));
    expect(refused(await loadMeters(home, env, uid))).toMatch(/'kind' must be/);
    write(withMeter({ keyenv: "X" }));
    expect(refused(await loadMeters(home, env, uid))).toMatch(/'keyenv' is not a setting of a openai-costs meter \(did you mean 'keyEnv'\?\); remove it/);
    write(withMeter({ workspace: "wrkspc_01" }));
    expect(refused(await loadMeters(home, env, uid))).toMatch(/'workspace' is not a setting of a openai-costs meter/);
    write(withMeter({ [CANARY]: 1 }));
    expect(refused(await loadMeters(home, env, uid))).toMatch(/a key is not a setting/);
    write({ meters: { local: { ...EXAMPLE.meters.local, key: CANARY } } });
    expect(refused(await loadMeters(home, env, uid))).toMatch(/'key' is not a setting of a command meter/);
  });

  it("refuses a bad duration: below 10 s, not a duration, missing", async () => {
    for (const every of ["5s", "9s", "1w", "60", "", 60, "2d"]) {
      write(withMeter({ every }));
      expect(refused(await loadMeters(home, env, uid)), String(every)).toMatch(/meter 'oai': 'every' must be/);
    }
    write(withMeter({}, ["every"]));
    expect(refused(await loadMeters(home, env, uid))).toMatch(/'every' must be a duration such as "60s"/);
    write(withMeter({ every: "10s" }));
    expect((await loadMeters(home, env, uid)).ok).toBe(true);
  });

  it("refuses team and meter names that are not names, and a lab that is not a declared name", async () => {
    for (const team of ["Proj", "-proj", "proj_x", "a".repeat(33), 7]) {
      write(withMeter({ team }));
      expect(refused(await loadMeters(home, env, uid)), String(team)).toMatch(/'team' must be (a team name: 1-32 lower-case letters|a non-empty string)/);
    }
    write(withMeter({ lab: "open ai" }));
    expect(refused(await loadMeters(home, env, uid))).toMatch(/'lab' must be a lab name/);
    write({ meters: { Bad_Name: EXAMPLE.meters.oai } });
    expect(refused(await loadMeters(home, env, uid))).toMatch(/a meter: a meter's name must be 1-32 lower-case letters/);
    write(withMeter({}, ["team"]));
    expect(refused(await loadMeters(home, env, uid))).toMatch(/'team' must be a non-empty string \(the team whose spend it reports\)/);
    write({ meter: {} });
    expect(refused(await loadMeters(home, env, uid))).toMatch(/must hold \{ "meters"/);
  });

  it("takes the key from 'key' or 'keyEnv', one of them; a missing variable, a short key or one with a line break is refused unquoted", async () => {
    write(withMeter({ keyEnv: "TEAMD_OPENAI_ADMIN_KEY" }));
    expect(refused(await loadMeters(home, env, uid))).toMatch(/give 'key' or 'keyEnv', not both/);
    write(withMeter({ keyEnv: "TEAMD_OPENAI_ADMIN_KEY" }, ["key"]));
    expect(refused(await loadMeters(home, env, uid))).toMatch(/the daemon's environment has no TEAMD_OPENAI_ADMIN_KEY; start teamd with it set/);
    write(withMeter({}, ["key"]));
    expect(refused(await loadMeters(home, env, uid))).toMatch(/the admin key is missing; add "keyEnv"/);
    write(withMeter({ key: "short" }));
    expect(refused(await loadMeters(home, env, uid))).toMatch(/'key' is shorter than 8 bytes/);
    write(withMeter({ key: `${CANARY}\n` }));
    expect(refused(await loadMeters(home, env, uid))).toMatch(/'key' holds a space, a line break or a non-ASCII character/);
    write(withMeter({ keyEnv: "BAD" }, ["key"]));
    expect(refused(await loadMeters(home, { BAD: `${ENV_KEY} x` }, uid))).toMatch(/the value of BAD holds a space/);
  });

  it("refuses two meters of one source (its usage would count twice), a bad command and a bad source id, and reports every meter's problem", async () => {
    write({ meters: { a: EXAMPLE.meters.oai, b: { ...EXAMPLE.meters.oai, team: "other" } } });
    expect(refused(await loadMeters(home, env, uid))).toMatch(
      /meters 'a' and 'b' both read the OpenAI project proj_abc at https:\/\/api.openai.com, so its usage would count twice/,
    );
    write({ meters: { a: EXAMPLE.meters.oai, b: { ...EXAMPLE.meters.oai, api: "http://127.0.0.1:9" } } });
    expect((await loadMeters(home, env, uid)).ok).toBe(true);
    for (const command of [[], "usage --json", [""], ["/bin/x", 3], ["/bin/x", "a\0b"]]) {
      write({ meters: { local: { ...EXAMPLE.meters.local, command } } });
      expect(refused(await loadMeters(home, env, uid)), JSON.stringify(command)).toMatch(/'command' must/);
    }
    write(withMeter({ project: "proj abc&x=1" }));
    expect(refused(await loadMeters(home, env, uid))).toMatch(/'project' must be an OpenAI project id/);
    write({ meters: { "claude-ws": { ...EXAMPLE.meters["claude-ws"], workspace: "../x" }, oai: { ...EXAMPLE.meters.oai, every: "1s" } } });
    const reason = refused(await loadMeters(home, env, uid));
    expect(reason).toMatch(/meter 'claude-ws': 'workspace' must be an Anthropic workspace id .*; .*meter 'oai': 'every' must be at least 10s/);
  });
});
