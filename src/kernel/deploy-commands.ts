import type { CanonicalValue } from "./canonical.js";
import type { DeclaredSets } from "./declared.js";
import { compareStrings, showPath } from "./paths.js";
import { type InputPath, type PolicyProblem, type StartInput, problem } from "./policy-input.js";
import { isPlainObject } from "./records.js";
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

export function readDeployCommands(raw: unknown, declared: DeclaredSets, problems: PolicyProblem[], teamFile: string): DeployCommands | undefined {
  if (raw === undefined || raw === null) return undefined;
  const at: InputPath = ["deploy"];
  if (!isPlainObject(raw)) {
    problems.push(problem("teamfile.schema", at, "deploy must be a map of environment → its command", "write e.g. `deploy: { staging: { command: [sh, deploy/ship.sh], files: [deploy/ship.sh] } }`"));
    return undefined;
  }
  // Keyed by names from the file: no prototype, so `__proto__` is a name like any other.
  const out = Object.create(null) as Record<string, StartContext>;
  for (const [env, value] of Object.entries(raw)) {
    const where = [...at, env];
    if (!declared.envs.includes(env)) {
      problems.push(problem("teamfile.schema", where, `environment '${env}' is not declared`, `add '${env}' to declare.envs, or correct the name`, "key"));
      continue;
    }
    if (!isPlainObject(value)) {
      problems.push(problem("teamfile.schema", where, `the deploy command of '${env}' must be a map (command, workdir, env, files)`, "write `command: [program, arg, ...]` indented under it"));
      continue;
    }
    const context = readStart(value as unknown as StartInput, where, problems, teamFile);
    if (context !== undefined) out[env] = context;
  }
  return Object.freeze(out);
}

/** Every pinned deploy file, for the reserved set (§3). */
export function deployFiles(commands: DeployCommands | undefined): string[] {
  return commands === undefined ? [] : Object.values(commands).flatMap((c) => c.files);
}

/** Canonical form under the team file's own keys, so the form loads again; part of the policy hash. */
export function canonicalDeployCommands(commands: DeployCommands): CanonicalValue {
  const out: Record<string, CanonicalValue> = {};
  for (const env of Object.keys(commands).sort(compareStrings)) {
    const c = commands[env] as StartContext;
    out[env] = { command: [...c.command], workdir: showPath(c.workdir), env: { ...c.env }, files: [...c.files] };
  }
  return out;
}
