import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { allSecrets, readTrackersFile, trackerFromConfig, trackersPath, TrackerConfigError } from "../../src/broker/index.js";

const TOKEN = "tkn-canary-config-5e1d9b7744aa";

describe("the owner's tracker configuration (§11): credentials outside every seat, in a 0600 file or the daemon's environment", () => {
  let dir: string;
  let file: string;
  const uid = process.getuid?.();
  const write = (data: unknown, mode = 0o600) => {
    writeFileSync(file, JSON.stringify(data));
    chmodSync(file, mode);
  };
  const message = async (p: Promise<unknown>) => {
    const error = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TrackerConfigError);
    const text = (error as Error).message;
    expect(text).not.toContain(TOKEN);
    return text;
  };
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "teamd-broker-config-"));
    mkdirSync(join(dir, "broker"));
    file = join(dir, "broker", "trackers.json");
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("lives at TEAMD_HOME/broker/trackers.json unless TEAMD_BROKER_TRACKERS names an absolute path", () => {
    expect(trackersPath("/h", {})).toBe("/h/broker/trackers.json");
    expect(trackersPath("/h", { TEAMD_BROKER_TRACKERS: "/etc/t.json" })).toBe("/etc/t.json");
    expect(() => trackersPath("/h", { TEAMD_BROKER_TRACKERS: "t.json" })).toThrow(/absolute/);
  });

  it("refuses a file readable by group or other, naming chmod 600, without quoting it", async () => {
    write({ trackers: { web: { kind: "github", repo: "acme/web", token: TOKEN } } }, 0o640);
    expect(await message(readTrackersFile(file, uid))).toContain(`chmod 600 ${file}`);
    chmodSync(file, 0o604);
    expect(await message(readTrackersFile(file, uid))).toContain("chmod 600");
  });

  it("refuses a symbolic link, a file of another user, and invalid JSON (never quoted)", async () => {
    write({ trackers: {} });
    const link = join(dir, "link.json");
    symlinkSync(file, link);
    expect(await message(readTrackersFile(link, uid))).toContain("symbolic link");
    expect(await message(readTrackersFile(file, (uid ?? 0) + 1))).toContain("daemon's user");
    writeFileSync(file, `{ "token": "${TOKEN}" `);
    expect(await message(readTrackersFile(file, uid))).toContain("not valid JSON");
  });

  it("reads a 0600 file; a missing one is undefined", async () => {
    expect(await readTrackersFile(file, uid)).toBeUndefined();
    write({ trackers: { web: { kind: "github", repo: "acme/web", token: TOKEN } } });
    const data = await readTrackersFile(file, uid);
    expect(trackerFromConfig(data, "web", {}, file)).toMatchObject({
      kind: "github",
      owner: "acme",
      repo: "web",
      api: "https://api.github.com",
      token: TOKEN,
      claimLabel: "teamd-claimed",
    });
  });

  it("takes the credential from the daemon's environment (tokenEnv), and names a missing variable", async () => {
    const data = { trackers: { web: { kind: "github", repo: "acme/web", tokenEnv: "TEAMD_GH" } } };
    expect(trackerFromConfig(data, "web", { TEAMD_GH: TOKEN }, file)).toMatchObject({ token: TOKEN });
    expect(() => trackerFromConfig(data, "web", {}, file)).toThrow(/has no TEAMD_GH/);
    expect(allSecrets(data, { TEAMD_GH: TOKEN })).toEqual([TOKEN]);
  });

  it("refuses what would leak or mislead: http to a non-loopback host, a URL with credentials, a short token, an unknown tracker or kind", () => {
    const one = (entry: Record<string, unknown>) => {
      try {
        trackerFromConfig({ trackers: { web: entry } }, "web", {}, file);
        return "";
      } catch (error) {
        expect((error as Error).message).not.toContain(TOKEN);
        return (error as Error).message;
      }
    };
    expect(one({ kind: "github", repo: "acme/web", token: TOKEN, api: "http://api.example.com" })).toContain("https");
    expect(one({ kind: "github", repo: "acme/web", token: TOKEN, api: `https://u:${TOKEN}@api.example.com` })).toContain("no credentials");
    expect(one({ kind: "github", repo: "acme/web", token: "short" })).toContain("shorter than");
    expect(one({ kind: "github", repo: "acme/web", token: TOKEN, tokenEnv: "X" })).toContain("not both");
    expect(one({ kind: "jira" })).toContain("'kind'");
    expect(one({ kind: "github", repo: "acme/web", token: TOKEN, api: "http://127.0.0.1:9/" })).toBe("");
    expect(() => trackerFromConfig({ trackers: {} }, "web", {}, file)).toThrow(/not configured/);
    expect(() => trackerFromConfig(undefined, "web", {}, file)).toThrow(/no tracker configuration/);
  });
});
