import { canonicalJson } from "./canonical.js";
import { canonicalPath, compareStrings, pathCovers, showPath } from "./paths.js";
import { type EgressContext, readEgress } from "./egress-context.js";
import { type InputPath, type PolicyProblem, type StartInput, problem } from "./policy-input.js";
import { canonicalLimits, readLimits, type StartLimits } from "./start-limits.js";
import { readContainment } from "./start-containment.js";
import { canonicalRestart, readRestart, type StartRestart } from "./start-restart.js";

/**
 * A seat's start: the hash-pinned command and execution context (§9 start, §10). The kernel
 * reads it into canonical form and names the files to pin; the loader reads those files and
 * hashes them (outside the kernel), and the seat's context hash covers the command, the
 * working root, the environment bindings, the lab and every start file's content — the
 * identity a same-copy agreement compares (issue 5). The start files are reserved (§3): a
 * seat can never rewrite its own instructions through a push or a merge.
 */
export interface StartContext {
  readonly command: readonly string[];
  /** Canonical repo-relative working root ("" is the root). */
  readonly workdir: string;
  readonly env: Readonly<Record<string, string>>;
  /** Canonical repo-relative paths, sorted. */
  readonly files: readonly string[];
  /** Allowed egress; absent: none (no proxy, nothing reachable). */
  readonly network?: EgressContext;
  /** Resource limits; absent: none asked for. */
  readonly limits?: StartLimits;
  /** `none`: the seat runs uncontained (M only). Absent: the platform's containment (bwrap on Linux). */
  readonly containment?: "none";
  /** When teamd starts the command again after its run ended by itself; absent: never. */
  readonly restart?: StartRestart;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function readStart(input: StartInput, at: InputPath, problems: PolicyProblem[], teamFile: string, lab?: string): StartContext | undefined {
  const before = problems.length;
  const command = Array.isArray(input.command) ? input.command : [];
  if (command.length === 0 || command.some((arg) => typeof arg !== "string") || command[0] === "") {
    problems.push(
      problem(
        "teamfile.schema",
        [...at, "command"],
        "the start command must be a non-empty list of arguments",
        "write the argv as a list, e.g. `command: [claude, --model, opus]` (no shell)",
      ),
    );
  }
  let workdir = "";
  if (input.workdir !== undefined) {
    const canonical = canonicalPath(String(input.workdir));
    if (canonical.ok) workdir = canonical.path;
    else
      problems.push(
        problem("teamfile.schema", [...at, "workdir"], `workdir: ${canonical.reason}`, "write a directory relative to the repository root (`.` for the root)"),
      );
  }
  // Keyed by names from the file: no prototype, so `__proto__` is a name like any other.
  const env = Object.create(null) as Record<string, string>;
  for (const [name, value] of Object.entries(input.env ?? {})) {
    if (!ENV_NAME.test(name))
      problems.push(
        problem(
          "teamfile.schema",
          [...at, "env", name],
          `'${name}' is not an environment variable name`,
          "use letters, digits and _, not starting with a digit",
          "key",
        ),
      );
    else if (typeof value !== "string") problems.push(problem("teamfile.schema", [...at, "env", name], `the value of ${name} must be text`, "quote it"));
    else env[name] = value;
  }
  const files = new Set<string>();
  (input.files ?? []).forEach((file, index) => {
    const canonical = canonicalPath(String(file));
    const where = [...at, "files", index];
    if (!canonical.ok || canonical.path === "") {
      problems.push(
        problem(
          "teamfile.schema",
          where,
          `start file '${String(file)}': ${canonical.ok ? "the root is a directory" : canonical.reason}`,
          "name a file relative to the repository root",
        ),
      );
    } else if (canonical.path.toLowerCase().split("/").includes(".git")) {
      problems.push(problem("reserved.object", where, `start file '${file}' is inside .git`, "keep start files in the working tree"));
    } else if (pathCovers(canonical.path, teamFile) || pathCovers(teamFile, canonical.path)) {
      problems.push(
        problem(
          "reserved.object",
          where,
          `start file '${file}' is the team file`,
          "the team file is never handed to a seat; name the seat's instruction file instead",
        ),
      );
    } else files.add(canonical.path);
  });
  const network = input.network === undefined ? undefined : readEgress(input.network, lab, [...at, "network"], problems);
  const limits = input.limits === undefined ? undefined : readLimits(input.limits, [...at, "limits"], problems);
  const containment = input.containment === undefined ? undefined : readContainment(input.containment, [...at, "containment"], problems);
  const restart = input.restart === undefined ? undefined : readRestart(input.restart, [...at, "restart"], problems);
  if (problems.length > before) return undefined;
  const sortedEnv = Object.create(null) as Record<string, string>;
  for (const name of Object.keys(env).sort(compareStrings)) sortedEnv[name] = env[name] as string;
  return Object.freeze({
    command: Object.freeze([...command]),
    workdir,
    env: Object.freeze(sortedEnv),
    files: Object.freeze([...files].sort(compareStrings)),
    ...(network !== undefined ? { network } : {}),
    ...(limits !== undefined ? { limits } : {}),
    ...(containment !== undefined ? { containment } : {}),
    ...(restart !== undefined ? { restart } : {}),
  });
}

/**
 * Canonical text of a seat's execution context, with each start file's content hash (computed
 * by the loader and passed in). A start file without a hash cannot be pinned, so the caller
 * must supply every one; a missing hash yields undefined.
 */
export function startContextCanonical(lab: string | undefined, start: StartContext, fileHashes: Readonly<Record<string, string>>): string | undefined {
  const files: { path: string; sha256: string }[] = [];
  for (const path of start.files) {
    const hash = Object.prototype.hasOwnProperty.call(fileHashes, path) ? fileHashes[path] : undefined;
    if (hash === undefined) return undefined;
    files.push({ path, sha256: hash });
  }
  // The network key appears only when declared, so a seat without egress keeps its hash.
  const network = start.network === undefined ? {} : { network: { allow: start.network.allow, private: start.network.private } };
  // So do the limits: a seat that declares none keeps the hash it had before limits existed.
  const limits = start.limits === undefined ? {} : { limits: canonicalLimits(start.limits) };
  // And containment: only `none` is hashed, so the default keeps every existing seat's hash.
  const containment = start.containment === undefined ? {} : { containment: start.containment };
  // And the restart policy: only a declared one (never, the default, keeps every existing hash).
  const restart = start.restart === undefined ? {} : { restart: canonicalRestart(start.restart) };
  return canonicalJson({
    lab: lab ?? null,
    command: start.command,
    workdir: showPath(start.workdir),
    env: start.env,
    files,
    ...network,
    ...limits,
    ...containment,
    ...restart,
  });
}
