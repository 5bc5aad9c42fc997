import { accountCredential, accountsPath, allAccountSecrets, readAccountsFile, type AccountCredential } from "./accounts.js";
import { allSecrets, configSecrets, defaultFileTracker, readTrackersFile, trackerFromConfig, trackersPath, type TrackerConfig } from "./config.js";
import { createFileTracker } from "./file-tracker.js";
import { createGithubTracker, type GithubDeps } from "./github-tracker.js";
import { scrubDetail, scrubSummary, secretForms, type SecretForms } from "./scrub.js";
import type { TaskDetail, TaskSummary, Tracker } from "./tracker.js";

/**
 * The secret broker (§11): a seat holding use-broker over a declared task resource may pull
 * the resource's open tasks, read one task's non-secret fields, or claim one — and nothing
 * else. The kernel decides whether it may (daemon/seat/broker.ts); this module finds the
 * resource's tracker, performs the call with the owner's credential, and hands back only the
 * allowlisted fields, each scrubbed of every credential the configuration holds.
 */
export type BrokerOperation = "pull" | "read" | "claim";

export type BrokerAnswer =
  | { readonly operation: "pull"; readonly tasks: readonly TaskSummary[] }
  | { readonly operation: "read"; readonly task: TaskDetail }
  | { readonly operation: "claim"; readonly task: TaskSummary };

/** A task resource's tracker, ready to call: resolved before any intent is recorded. */
export interface ResolvedTracker {
  /** The tracker's name for records ("(default)" for the embedded file tracker). */
  readonly name: string;
  readonly kind: TrackerConfig["kind"];
  /** What a claim is serialized on: the folder, or the API and repository. */
  readonly where: string;
  readonly tracker: Tracker;
  readonly forms: SecretForms;
}

export interface BrokerDeps extends GithubDeps {
  readonly teamdHome: string;
  /** The daemon's environment: where `tokenEnv` credentials and TEAMD_BROKER_TRACKERS are read. */
  readonly env: NodeJS.ProcessEnv;
  /** The daemon's uid: the configuration file must be its (undefined: not checked, e.g. Windows). */
  readonly uid?: number;
}

export interface Broker {
  /**
   * The tracker for a team's task resource: the one the team file maps it to (`trackers:`), or
   * the embedded default file tracker. Throws TrackerConfigError naming the fix.
   */
  resolve(team: string, task: string, trackerName: string | undefined): Promise<ResolvedTracker>;
  run(resolved: ResolvedTracker, operation: BrokerOperation, id: string, claimant: string): Promise<BrokerAnswer>;
  /**
   * The owner's credential for a declared account (act-as, §3), and every secret form the
   * owner's configuration holds (all accounts, all trackers, the Basic pair a push sends) for
   * scrubbing whatever the act's far end answers. Throws AccountConfigError naming the fix.
   */
  /** `identity`: what the team file signs the account resolves to (accounts:); the accounts file must agree. */
  account(account: string, declared: readonly string[], identity?: string): Promise<{ readonly credential: AccountCredential; readonly forms: SecretForms }>;
  /** Post a comment on a task under the account (the tracker's own credential is not used). */
  comment(resolved: ResolvedTracker, id: string, credential: AccountCredential, body: string, seat: string): Promise<TaskSummary>;
}

export function createBroker(deps: BrokerDeps): Broker {
  // One claim at a time per task: two seats racing for one task get one winner.
  const claims = new Map<string, Promise<unknown>>();

  function serialize<T>(key: string, work: () => Promise<T>): Promise<T> {
    const prior = claims.get(key) ?? Promise.resolve();
    const next = prior.then(work, work);
    const settled = next.then(
      () => undefined,
      () => undefined,
    );
    claims.set(key, settled);
    void settled.then(() => {
      if (claims.get(key) === settled) claims.delete(key);
    });
    return next;
  }

  return {
    async resolve(team, task, trackerName) {
      const path = trackersPath(deps.teamdHome, deps.env);
      // The file is read even for the default tracker: its credentials are scrubbed from every reply.
      const data = await readTrackersFile(path, deps.uid);
      const config = trackerName === undefined ? defaultFileTracker(deps.teamdHome, team, task) : trackerFromConfig(data, trackerName, deps.env, path);
      const accounts = await readAccountsFile(accountsPath(deps.teamdHome, deps.env), deps.uid).catch(() => undefined);
      const forms = secretForms([...allSecrets(data, deps.env), ...configSecrets(config), ...allAccountSecrets(accounts, deps.env)]);
      const tracker = config.kind === "file" ? createFileTracker(config.dir) : createGithubTracker(config, deps);
      const where = config.kind === "file" ? config.dir : `${config.api}/${config.owner}/${config.repo}`;
      return { name: config.name, kind: config.kind, where, tracker, forms };
    },
    async run(resolved, operation, id, claimant) {
      switch (operation) {
        case "pull":
          return { operation, tasks: (await resolved.tracker.pull()).map((t) => scrubSummary(t, resolved.forms)) };
        case "read":
          return { operation, task: scrubDetail(await resolved.tracker.read(id), resolved.forms) };
        case "claim":
          return { operation, task: scrubSummary(await serialize(`${resolved.where}\0${id}`, () => resolved.tracker.claim(id, claimant)), resolved.forms) };
      }
    },
    async account(account, declared, identity) {
      const path = accountsPath(deps.teamdHome, deps.env);
      const data = await readAccountsFile(path, deps.uid);
      const credential = accountCredential(data, account, declared, deps.env, path, identity);
      const trackers = await readTrackersFile(trackersPath(deps.teamdHome, deps.env), deps.uid).catch(() => undefined);
      const forms = secretForms([
        ...allAccountSecrets(data, deps.env),
        ...allSecrets(trackers, deps.env),
        credential.token,
        `${credential.username}:${credential.token}`,
      ]);
      return { credential, forms };
    },
    async comment(resolved, id, credential, body, seat) {
      // Serialized with claims: a file tracker's task is rewritten whole.
      return scrubSummary(
        await serialize(`${resolved.where}\0${id}`, () => resolved.tracker.comment(id, body, { account: credential.name, token: credential.token, seat })),
        resolved.forms,
      );
    },
  };
}
