import type { DeclaredSets } from "./declared.js";
import { type InputPath, type PolicyProblem, problem } from "./policy-input.js";
import { isPlainObject } from "./records.js";

/**
 * The team file's `accounts:` map (§3 act-as, §7, §8): what each declared account resolves
 * to — its identity at the remote or tracker (a login, a bot's name), never its secret. The
 * credential stays in the owner's accounts file outside every seat's view
 * (src/broker/accounts.ts), which must name the same identity: the unsigned file can no longer
 * point an account at someone else without an owner act, and changing an identity here is a
 * retarget that revokes every lease naming the account, as a removal does (cascade.ts).
 * Part of the policy hash; left out of the canonical form when absent.
 */
export type AccountIdentities = Readonly<Record<string, string>>;

const MAX_IDENTITY = 200;

export function readAccountIdentities(raw: unknown, declared: DeclaredSets, problems: PolicyProblem[]): AccountIdentities | undefined {
  if (raw === undefined || raw === null) return undefined;
  const at: InputPath = ["accounts"];
  if (!isPlainObject(raw)) {
    problems.push(
      problem("teamfile.schema", at, "accounts must be a map of declared account → its identity", 'write e.g. `accounts: { "github:acme-bot": acme-bot }`'),
    );
    return undefined;
  }
  const out = Object.create(null) as Record<string, string>;
  for (const [account, identity] of Object.entries(raw)) {
    const where = [...at, account];
    if (!declared.accounts.includes(account)) {
      problems.push(
        problem("teamfile.schema", where, `account '${account}' is not declared`, `add '${account}' to declare.accounts, or correct the name`, "key"),
      );
      continue;
    }
    // Printable, one line, bounded: it is shown to the owner and compared, never interpreted.
    if (typeof identity !== "string" || identity === "" || identity.length > MAX_IDENTITY || /\p{C}/u.test(identity)) {
      problems.push(
        problem(
          "teamfile.schema",
          where,
          `the identity of account '${account}' must be 1-${MAX_IDENTITY} printable characters on one line`,
          "write the login or name the account's credential acts as, e.g. acme-bot",
        ),
      );
      continue;
    }
    out[account] = identity;
  }
  return Object.freeze(out);
}

/** The canonical form: sorted by account. */
export function canonicalAccountIdentities(identities: AccountIdentities): Record<string, string> {
  return Object.fromEntries(
    Object.keys(identities)
      .sort()
      .map((k) => [k, identities[k] as string]),
  );
}

/** The identity the policy signs for an account, if it names one (own keys only). */
export function accountIdentity(policy: { readonly accountIdentities?: AccountIdentities }, account: string): string | undefined {
  const identities = policy.accountIdentities;
  return identities !== undefined && Object.prototype.hasOwnProperty.call(identities, account) ? identities[account] : undefined;
}
