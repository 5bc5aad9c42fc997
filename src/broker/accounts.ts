import { isAbsolute, join } from "node:path";
import { readTrackersFile } from "./config.js";
import { MIN_SECRET_BYTES } from "./scrub.js";

/**
 * The owner's accounts (§3 act-as, §11): the credential of each external identity teamd may
 * act under — a push to the owner's remote, a comment on a tracker. Kept as the trackers'
 * are: in a file only the daemon's user can read (mode 600, its owner, no link), outside
 * everything a seat can see, or in the daemon's environment (`tokenEnv`); never in the team
 * file (which names accounts only, in `declare.accounts`) and never in a seat. Read at each
 * act, so an owner's edit takes effect without a restart.
 *
 * {
 *   "accounts": {
 *     "github:acme-bot": { "tokenEnv": "TEAMD_ACME_BOT_TOKEN", "identity": "acme-bot" },
 *     "git:release":     { "token": "…", "username": "x-access-token" }
 *   }
 * }
 *
 * `username` is what a git push sends beside the token in HTTP Basic (GitHub takes any; its
 * default is x-access-token); a tracker comment sends the token as a Bearer.
 */
export interface AccountCredential {
  readonly name: string;
  readonly username: string;
  readonly token: string;
}

export class AccountConfigError extends Error {
  override readonly name = "AccountConfigError";
}

/** Where the owner's accounts are: `$TEAMD_BROKER_ACCOUNTS`, else `TEAMD_HOME/broker/accounts.json`. */
export function accountsPath(teamdHome: string, env: NodeJS.ProcessEnv): string {
  const given = env.TEAMD_BROKER_ACCOUNTS;
  if (given !== undefined && given !== "") {
    if (!isAbsolute(given)) throw new AccountConfigError(`TEAMD_BROKER_ACCOUNTS='${given}' is not an absolute path; give the file's full path`);
    return given;
  }
  return join(teamdHome, "broker", "accounts.json");
}

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Read and check the accounts file (the trackers file's checks: regular, 600, the daemon's user's); undefined when absent. */
export async function readAccountsFile(path: string, uid?: number): Promise<unknown> {
  try {
    return await readTrackersFile(path, uid);
  } catch (error) {
    // The same checks, named for this file; the message never quotes the file's content.
    throw new AccountConfigError((error as Error).message.replace("the tracker configuration", "the accounts"));
  }
}

/**
 * The credential of `account` for a team that declares `declared`: refused when the account is
 * not declared (a credential is never used for a name the team file does not declare), when the
 * file or the environment holds none, or when what it holds is not a usable token.
 */
export function accountCredential(
  data: unknown,
  account: string,
  declared: readonly string[],
  env: NodeJS.ProcessEnv,
  path: string,
  identity?: string,
): AccountCredential {
  if (!declared.includes(account))
    throw new AccountConfigError(
      `account '${account}' is not in the team file's declare.accounts; teamd uses no credential for an undeclared account (the owner declares it and runs teamd apply)`,
    );
  if (data === undefined)
    throw new AccountConfigError(
      `there is no accounts configuration at ${path}; the owner creates it (mode 600) with "accounts": { "${account}": { "tokenEnv": "…" } }`,
    );
  if (!isMap(data) || !isMap(data.accounts)) throw new AccountConfigError(`${path} must hold { "accounts": { name: { token | tokenEnv, username? } } }`);
  const entry = Object.prototype.hasOwnProperty.call(data.accounts, account) ? data.accounts[account] : undefined;
  if (!isMap(entry)) throw new AccountConfigError(`account '${account}' has no credential in ${path}; the owner adds it under "accounts"`);
  const where = `${path}: account '${account}'`;
  // What the account resolves to is signed in the team file (accounts:); the unsigned file must
  // agree, or the credential acts as someone no owner act named (§3, §7). Never a guess.
  if (identity !== undefined && entry.identity !== identity) {
    throw new AccountConfigError(
      typeof entry.identity === "string"
        ? `${where}: its credential is for identity '${entry.identity}', and the team file's accounts: names '${identity}'; the owner makes them agree (a changed identity is applied with teamd apply, which revokes the leases naming the account)`
        : `${where}: the team file's accounts: names its identity '${identity}', and the accounts file does not say whose credential this is; the owner adds "identity": "${identity}" to the entry`,
    );
  }
  if (entry.token !== undefined && entry.tokenEnv !== undefined) throw new AccountConfigError(`${where}: give 'token' or 'tokenEnv', not both`);
  let token: unknown;
  if (entry.tokenEnv !== undefined) {
    if (typeof entry.tokenEnv !== "string" || entry.tokenEnv === "") throw new AccountConfigError(`${where}: 'tokenEnv' must name a variable`);
    token = env[entry.tokenEnv];
    if (token === undefined || token === "")
      throw new AccountConfigError(`${where}: the daemon's environment has no ${entry.tokenEnv}; start teamd with it set`);
  } else token = entry.token;
  if (typeof token !== "string" || token === "") throw new AccountConfigError(`${where}: 'token' (or 'tokenEnv') must be given`);
  if (Buffer.byteLength(token) < MIN_SECRET_BYTES)
    throw new AccountConfigError(`${where}: the token is shorter than ${MIN_SECRET_BYTES} bytes; that is not a credential teamd can keep out of replies`);
  // A header value: a line break would let the token end one header and write another.
  if (/[\0\r\n]/.test(token)) throw new AccountConfigError(`${where}: the token holds a line break or NUL`);
  const username = entry.username === undefined ? "x-access-token" : entry.username;
  if (typeof username !== "string" || username === "" || /[:\0\r\n]/.test(username))
    throw new AccountConfigError(`${where}: 'username' must be a non-empty name without ':' or line breaks`);
  return { name: account, username, token };
}

/** Every credential the accounts file names (each token, each tokenEnv's value): scrubbed from every reply and record. */
export function allAccountSecrets(data: unknown, env: NodeJS.ProcessEnv): string[] {
  if (!isMap(data) || !isMap(data.accounts)) return [];
  const out: string[] = [];
  for (const entry of Object.values(data.accounts)) {
    if (!isMap(entry)) continue;
    if (typeof entry.token === "string") out.push(entry.token);
    if (typeof entry.tokenEnv === "string") {
      const value = env[entry.tokenEnv];
      if (value !== undefined) out.push(value);
    }
  }
  return out.filter((s) => Buffer.byteLength(s) >= MIN_SECRET_BYTES);
}
