import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chmodSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AccountConfigError, accountCredential, accountsPath, allAccountSecrets, readAccountsFile } from "../../src/broker/accounts.js";
import { createBroker } from "../../src/broker/broker.js";
import { scrubValue, SCRUBBED_CREDENTIAL } from "../../src/broker/scrub.js";

/** The owner's accounts (act-as): where their credentials are, and every way a credential is refused. */
const TOKEN = "acct-unit-canary-1b2c3d4e5f";
const PATH = "/owner/accounts.json";

describe("accounts: the owner's act-as credentials", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "teamd-accounts-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("finds the file under TEAMD_HOME, or where TEAMD_BROKER_ACCOUNTS says (absolute only)", () => {
    expect(accountsPath("/home/teamd", {})).toBe("/home/teamd/broker/accounts.json");
    expect(accountsPath("/home/teamd", { TEAMD_BROKER_ACCOUNTS: "/etc/a.json" })).toBe("/etc/a.json");
    expect(() => accountsPath("/home/teamd", { TEAMD_BROKER_ACCOUNTS: "a.json" })).toThrow(AccountConfigError);
  });

  it("reads a token from the file or the daemon's environment, with HTTP Basic's username defaulted", () => {
    const data = { accounts: { "git:a": { token: TOKEN, username: "bot" }, "gh:b": { tokenEnv: "B_TOKEN" } } };
    expect(accountCredential(data, "git:a", ["git:a", "gh:b"], {}, PATH)).toEqual({ name: "git:a", username: "bot", token: TOKEN });
    expect(accountCredential(data, "gh:b", ["git:a", "gh:b"], { B_TOKEN: `${TOKEN}-env` }, PATH)).toEqual({
      name: "gh:b",
      username: "x-access-token",
      token: `${TOKEN}-env`,
    });
    expect(allAccountSecrets(data, { B_TOKEN: `${TOKEN}-env` })).toEqual([TOKEN, `${TOKEN}-env`]);
  });

  it("uses a credential only for the identity the team file signs (accounts:), when it names one (issue 24, item 12)", () => {
    const data = { accounts: { "git:a": { token: TOKEN, identity: "acme-bot" }, "git:b": { token: TOKEN } } };
    const declared = ["git:a", "git:b"];
    expect(accountCredential(data, "git:a", declared, {}, PATH, "acme-bot").token).toBe(TOKEN);
    expect(() => accountCredential(data, "git:a", declared, {}, PATH, "someone-else")).toThrow(
      /for identity 'acme-bot', and the team file's accounts: names 'someone-else'/,
    );
    // The team file names an identity and the file says nothing: refused, never assumed.
    expect(() => accountCredential(data, "git:b", declared, {}, PATH, "acme-bot")).toThrow(
      /does not say whose credential this is; the owner adds "identity": "acme-bot"/,
    );
    // No identity signed: as before.
    expect(accountCredential(data, "git:b", declared, {}, PATH).token).toBe(TOKEN);
  });

  const refusals: [string, unknown, string, NodeJS.ProcessEnv, RegExp][] = [
    ["an undeclared account, even with a credential", { accounts: { "git:x": { token: TOKEN } } }, "git:x", {}, /not in the team file's declare\.accounts/],
    ["no configuration at all", undefined, "git:a", {}, /no accounts configuration at \/owner\/accounts\.json/],
    ["a declared account without a credential", { accounts: {} }, "git:a", {}, /has no credential in/],
    ["a tokenEnv the daemon's environment lacks", { accounts: { "git:a": { tokenEnv: "NOPE" } } }, "git:a", {}, /has no NOPE/],
    ["both token and tokenEnv", { accounts: { "git:a": { token: TOKEN, tokenEnv: "X" } } }, "git:a", { X: TOKEN }, /not both/],
    ["a token too short to scrub", { accounts: { "git:a": { token: "short" } } }, "git:a", {}, /shorter than 8 bytes/],
    ["a token with a line break (a second header)", { accounts: { "git:a": { token: `${TOKEN}\r\nX-Evil: 1` } } }, "git:a", {}, /line break/],
    ["a username with a colon", { accounts: { "git:a": { token: TOKEN, username: "a:b" } } }, "git:a", {}, /username/],
    ["a malformed file", { accounts: [] }, "git:a", {}, /must hold/],
  ];
  it.each(refusals)("refuses %s, naming the fix and never the token", (_what, data, account, env, message) => {
    let error: unknown;
    try {
      accountCredential(data, account, ["git:a"], env, PATH);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(AccountConfigError);
    expect(String((error as Error).message)).toMatch(message);
    expect(String((error as Error).message)).not.toContain(TOKEN);
  });

  it("refuses a file readable by others, a link, naming chmod 600; reads a 0600 one", async () => {
    const path = join(dir, "accounts.json");
    writeFileSync(path, JSON.stringify({ accounts: { "git:a": { token: TOKEN } } }), { mode: 0o644 });
    chmodSync(path, 0o644);
    await expect(readAccountsFile(path)).rejects.toThrow(/chmod 600/);
    chmodSync(path, 0o600);
    await expect(readAccountsFile(path)).resolves.toEqual({ accounts: { "git:a": { token: TOKEN } } });
    const link = join(dir, "link.json");
    symlinkSync(path, link);
    await expect(readAccountsFile(link)).rejects.toThrow(/symbolic link/);
    await expect(readAccountsFile(join(dir, "absent.json"))).resolves.toBeUndefined();
  });

  it("the broker scrubs every account's token, and the Basic pair a push sends, from what the far end answers", async () => {
    const home = join(dir, "home");
    const path = join(dir, "acc2.json");
    writeFileSync(path, JSON.stringify({ accounts: { "git:a": { token: TOKEN }, "gh:b": { tokenEnv: "B" } } }), { mode: 0o600 });
    const broker = createBroker({ teamdHome: home, env: { TEAMD_BROKER_ACCOUNTS: path, B: "other-account-token-99" } });
    const { credential, forms } = await broker.account("git:a", ["git:a"]);
    expect(credential.token).toBe(TOKEN);
    const basic = Buffer.from(`x-access-token:${TOKEN}`).toString("base64");
    for (const line of [`remote: bad ${TOKEN}`, `Authorization: Basic ${basic}`, "echo other-account-token-99", Buffer.from(TOKEN).toString("hex")]) {
      expect(scrubValue(line, forms), line).toBe(SCRUBBED_CREDENTIAL);
    }
    expect(scrubValue("To http://127.0.0.1/web.git", forms)).toBe("To http://127.0.0.1/web.git");
    await expect(broker.account("gh:b", ["git:a"])).rejects.toThrow(/not in the team file's declare\.accounts/);
  });
});
