import type { CanonicalValue } from "./canonical.js";
import type { DeclaredSets } from "./declared.js";
import { compareStrings, showPath } from "./paths.js";
import { type InputPath, type PolicyProblem, type StartInput, problem } from "./policy-input.js";
import { isPlainObject } from "./records.js";
import { normalizeBranch } from "./refs.js";
import { readStart, type StartContext } from "./start-context.js";

/**
 * The owner's deploy commands (§3 deploy, §10 hash-pinned commands): per declared environment,
 * the argv (no shell), working root, environment bindings and files a deploy to it runs —
 * the same shape and pinning as a seat's `start`. The files are pinned by content hash (the
 * loader hashes them; the kernel hashes nothing) and reserved like start files (§3), so no
 * seat can change what a deploy runs through a push or a merge; a file changed on disk since
 * `teamd apply` no longer matches its pin and the daemon refuses the deploy.
 *
 * A deploy runs outside every sandbox as the daemon's user, so nothing here is optional that
 * could widen it: an environment that is not declared cannot carry a command, and an
 * environment without a command cannot be deployed to.
 */
export type DeployCommands = Readonly<Record<string, StartContext>>;

/**
 * A publish (§3 act-as): the environment is the owner's git remote. A deploy to it pushes the
 * gated artifact to `url`'s `branch` under the owner's declared `account` — the daemon does
 * it with the account's credential, which no seat ever holds. The remote, the branch and the
 * account are the owner's (§8): written here, in the hashed policy, never named by a seat.
 */
export interface DeployPush {
  readonly env: string;
  /** https, or plain http to a loopback host only (the credential would travel in clear otherwise). */
  readonly url: string;
  readonly branch: string;
  /** A name of declare.accounts: the push runs under it, and a deployer needs act-as over it. */
  readonly account: string;
}

export type DeployPushes = Readonly<Record<string, DeployPush>>;

const LOOPBACK_HOSTS: readonly string[] = ["127.0.0.1", "localhost", "[::1]"];

/** The remote's URL as the owner wrote it, checked: a problem's text, or the URL. */
function checkRemoteUrl(raw: unknown): { url: string } | { problem: string } {
  if (typeof raw !== "string" || raw === "") return { problem: "push.url must be the remote's URL (https://host/owner/repo.git)" };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { problem: `push.url '${raw}' is not a URL` };
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && LOOPBACK_HOSTS.includes(url.hostname))) {
    return { problem: `push.url must be https (plain http only to a loopback host): the account's credential would travel in clear` };
  }
  // A credential in the URL would be in the team file, in the policy and in every record of it.
  if (url.username !== "" || url.password !== "")
    return { problem: "push.url must carry no user or password: the credential is the owner's configuration's, never the team file's" };
  if (url.search !== "" || url.hash !== "") return { problem: "push.url must carry no query or fragment" };
  return { url: url.href };
}

function readPush(env: string, value: Record<string, unknown>, declared: DeclaredSets, problems: PolicyProblem[]): DeployPush | undefined {
  const where: InputPath = ["deploy", env];
  const before = problems.length;
  for (const key of ["command", "workdir", "env", "files"]) {
    if (value[key] !== undefined)
      problems.push(
        problem(
          "teamfile.unsupported",
          [...where, key],
          `'${key}' is not supported yet beside push: an environment either pushes to the owner's remote or runs a command`,
          "declare a second environment for the command",
          "key",
        ),
      );
  }
  const push = value.push;
  if (!isPlainObject(push)) {
    problems.push(
      problem("teamfile.schema", [...where, "push"], "push must be a map (url, branch)", "write `push: { url: https://host/owner/repo.git, branch: main }`"),
    );
    return undefined;
  }
  for (const key of Object.keys(push)) {
    if (key !== "url" && key !== "branch")
      problems.push(problem("teamfile.schema", [...where, "push", key], `unknown key '${key}' in push`, "push takes: url, branch", "key"));
  }
  const url = checkRemoteUrl(push.url);
  if ("problem" in url)
    problems.push(problem("teamfile.schema", [...where, "push", "url"], url.problem, "write the remote's https URL, with no credential in it"));
  const branch = typeof push.branch === "string" ? normalizeBranch(push.branch, { pattern: false }) : undefined;
  if (branch === undefined || !branch.ok)
    problems.push(
      problem(
        "teamfile.schema",
        [...where, "push", "branch"],
        `push.branch must be one branch name${branch !== undefined && !branch.ok ? ` (${branch.reason})` : ""}`,
        "write e.g. `branch: main`",
      ),
    );
  const account = value.account;
  if (typeof account !== "string" || account === "") {
    problems.push(problem("teamfile.schema", where, "a push runs under the owner's account: name it", "add `account: <a name of declare.accounts>`", "key"));
  } else if (!declared.accounts.includes(account)) {
    problems.push(
      problem("teamfile.schema", [...where, "account"], `account '${account}' is not declared`, `add '${account}' to declare.accounts, or correct the name`),
    );
  }
  if (problems.length > before || "problem" in url || branch === undefined || !branch.ok || typeof account !== "string") return undefined;
  return Object.freeze({ env, url: url.url, branch: branch.name, account });
}

export function readDeployCommands(raw: unknown, declared: DeclaredSets, problems: PolicyProblem[], teamFile: string): DeployCommands | undefined {
  return readDeploys(raw, declared, problems, teamFile).commands;
}

/** Each declared environment's deploy: a pinned command, or a push to the owner's remote. */
export function readDeploys(
  raw: unknown,
  declared: DeclaredSets,
  problems: PolicyProblem[],
  teamFile: string,
): { commands?: DeployCommands; pushes?: DeployPushes } {
  if (raw === undefined || raw === null) return {};
  const at: InputPath = ["deploy"];
  if (!isPlainObject(raw)) {
    problems.push(
      problem(
        "teamfile.schema",
        at,
        "deploy must be a map of environment → its command",
        "write e.g. `deploy: { staging: { command: [sh, deploy/ship.sh], files: [deploy/ship.sh] } }`",
      ),
    );
    return {};
  }
  // Keyed by names from the file: no prototype, so `__proto__` is a name like any other.
  const out = Object.create(null) as Record<string, StartContext>;
  let pushes: Record<string, DeployPush> | undefined;
  for (const [env, value] of Object.entries(raw)) {
    const where = [...at, env];
    if (!declared.envs.includes(env)) {
      problems.push(problem("teamfile.schema", where, `environment '${env}' is not declared`, `add '${env}' to declare.envs, or correct the name`, "key"));
      continue;
    }
    if (!isPlainObject(value)) {
      problems.push(
        problem(
          "teamfile.schema",
          where,
          `the deploy command of '${env}' must be a map (command, workdir, env, files)`,
          "write `command: [program, arg, ...]` indented under it",
        ),
      );
      continue;
    }
    if (value.push !== undefined) {
      const push = readPush(env, value, declared, problems);
      pushes ??= Object.create(null) as Record<string, DeployPush>;
      if (push !== undefined) pushes[env] = push;
      continue;
    }
    // A command receives no credential: an account names whose identity an act runs under, and a command's is the daemon user's.
    if (value.account !== undefined) {
      problems.push(
        problem(
          "teamfile.schema",
          [...where, "account"],
          "an account belongs to a push (`push: { url, branch }`): a deploy command runs with no owner's credential",
          "remove `account`, or make the environment a push",
          "key",
        ),
      );
    }
    const context = readStart(value as unknown as StartInput, where, problems, teamFile);
    if (context !== undefined) out[env] = context;
  }
  return { commands: Object.freeze(out), ...(pushes !== undefined ? { pushes: Object.freeze(pushes) } : {}) };
}

/** Every pinned deploy file, for the reserved set (§3). */
export function deployFiles(commands: DeployCommands | undefined): string[] {
  return commands === undefined ? [] : Object.values(commands).flatMap((c) => c.files);
}

/** Canonical form under the team file's own keys, so the form loads again; part of the policy hash. */
export function canonicalDeployCommands(commands: DeployCommands, pushes?: DeployPushes): CanonicalValue {
  const out: Record<string, CanonicalValue> = {};
  for (const env of Object.keys(commands).sort(compareStrings)) {
    const c = commands[env] as StartContext;
    out[env] = { command: [...c.command], workdir: showPath(c.workdir), env: { ...c.env }, files: [...c.files] };
  }
  for (const env of Object.keys(pushes ?? {}).sort(compareStrings)) {
    const p = (pushes as DeployPushes)[env] as DeployPush;
    out[env] = { push: { url: p.url, branch: p.branch }, account: p.account };
  }
  return out;
}
