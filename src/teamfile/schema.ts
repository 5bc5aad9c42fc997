import { closest } from "../kernel/names.js";
import { type InputPath, type PolicyInput, type PolicyProblem, type RoleInput, type SeatInput, type StartInput, problem } from "../kernel/policy-input.js";
import { isPlainObject } from "../kernel/records.js";
import { NOT_SUPPORTED, type Level } from "./not-supported.js";

/**
 * The published schema (docs/team-file.md), structural half: which keys each map may hold,
 * and the type of each fixed field. The kernel checks the rest — capabilities, dimensions and
 * every scope value — so each rule lives in one place. A key this release does not enforce is
 * refused as "not supported yet", naming where it lands; any other unknown key is refused with
 * the nearest known one, never ignored.
 */
const KEYS: Readonly<Record<Level, readonly string[]>> = {
  top: ["version", "team", "declare", "review", "constraints", "leads", "ceiling", "deny", "two-granter", "deploy", "trackers", "accounts", "roles", "seats"],
  declare: ["branches", "envs", "accounts", "tasks", "labs"],
  role: ["template", "scope", "capabilities"],
  seat: ["lab", "roles", "capabilities", "start"],
  start: ["command", "workdir", "env", "files", "network", "limits", "containment", "restart"],
  deploy: ["command", "workdir", "env", "files", "push", "account"],
};

const DESCRIBE: Readonly<Record<Level, string>> = {
  top: "the team file",
  declare: "declare",
  role: "a role",
  seat: "a seat",
  start: "start",
  deploy: "a deploy command",
};

export interface SchemaResult {
  readonly input: PolicyInput;
  readonly problems: readonly PolicyProblem[];
  /** Whether problems upstream of the kernel's checks (version, declare) make them moot. */
  readonly blocking: boolean;
}

class Reader {
  readonly problems: PolicyProblem[] = [];

  map(value: unknown, at: InputPath, level: Level): Record<string, unknown> | undefined {
    if (!isPlainObject(value)) {
      this.problems.push(problem("teamfile.schema", at, `${DESCRIBE[level]} must be a map of keys`, "write `key: value` lines indented under it"));
      return undefined;
    }
    const known = KEYS[level];
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) {
      const unsupported = NOT_SUPPORTED[level][key];
      if (unsupported !== undefined) {
        this.problems.push(
          problem(
            "teamfile.unsupported",
            [...at, key],
            `'${key}' is not supported yet: ${unsupported}`,
            "remove it; teamd refuses what it does not enforce rather than accept it silently",
            "key",
          ),
        );
      } else if (!known.includes(key) && key === "create-bounds") {
        this.problems.push(
          problem(
            "teamfile.schema",
            [...at, key],
            "create-bounds are not written in a team file: they are owner-sovereign and written on the machine (§10), where no seat's file can carry them",
            "remove it, and run `teamd create-bounds set SEAT@TEAM …` as the owner",
            "key",
          ),
        );
      } else if (!known.includes(key) && (key === "grant" || key === "agree" || key === "create")) {
        this.problems.push(
          problem(
            "teamfile.schema",
            [...at, key],
            `'${key}' is not a key of ${DESCRIBE[level]}: ${key} (§10) is a capability one seat holds`,
            `write \`${key}: ~\` under the holding seat's capabilities`,
            "key",
          ),
        );
      } else if (!known.includes(key)) {
        const guess = closest(key, known);
        this.problems.push(
          problem(
            "teamfile.schema",
            [...at, key],
            `unknown key '${key}' in ${DESCRIBE[level]}`,
            guess !== undefined ? `did you mean '${guess}'?` : `${DESCRIBE[level]} takes: ${known.join(", ")}`,
            "key",
          ),
        );
      } else out[key] = v;
    }
    return out;
  }

  string(value: unknown, at: InputPath, what: string): string | undefined {
    if (typeof value === "string") return value;
    this.problems.push(
      problem(
        "teamfile.schema",
        at,
        `${what} must be text`,
        typeof value === "number" || typeof value === "boolean" ? `quote it: "${String(value)}"` : `write ${what} as a single value`,
      ),
    );
    return undefined;
  }

  strings(value: unknown, at: InputPath, what: string): string[] | undefined {
    if (!Array.isArray(value)) {
      this.problems.push(problem("teamfile.schema", at, `${what} must be a list`, "write `[a, b]` or one `- item` per line (`[]` for none)"));
      return undefined;
    }
    const out: string[] = [];
    let bad = false;
    value.forEach((item, index) => {
      const s = this.string(item, [...at, index], `each entry of ${what}`);
      if (s === undefined) bad = true;
      else out.push(s);
    });
    return bad ? undefined : out;
  }

  names(value: unknown, at: InputPath, level: "role" | "seat"): Record<string, unknown> {
    if (value === undefined || value === null) return {};
    if (!isPlainObject(value)) {
      this.problems.push(
        problem(
          "teamfile.schema",
          at,
          `${level}s must be a map of ${level} name → ${level}`,
          `write each ${level} as \`name:\` with its keys indented under it`,
        ),
      );
      return {};
    }
    return value;
  }
}

function readRole(r: Reader, value: unknown, at: InputPath): RoleInput {
  const map = r.map(value ?? {}, at, "role");
  if (map === undefined) return {};
  const template = map.template === undefined ? undefined : r.string(map.template, [...at, "template"], "template");
  return {
    ...(template !== undefined ? { template } : {}),
    ...(map.scope !== undefined ? { scope: map.scope as RoleInput["scope"] } : {}),
    ...(map.capabilities !== undefined ? { capabilities: map.capabilities as RoleInput["capabilities"] } : {}),
  };
}

function readStart(r: Reader, value: unknown, at: InputPath, level: "start" | "deploy" = "start"): StartInput | undefined {
  const map = r.map(value, at, level);
  if (map === undefined) return undefined;
  const command = map.command === undefined ? undefined : r.strings(map.command, [...at, "command"], "command");
  if (map.command === undefined)
    r.problems.push(
      problem("teamfile.schema", at, `${level === "start" ? "start" : "the deploy command"} has no command`, "add `command: [program, arg, ...]`", "key"),
    );
  const workdir = map.workdir === undefined ? undefined : r.string(map.workdir, [...at, "workdir"], "workdir");
  let env: Record<string, string> | undefined;
  if (map.env !== undefined) {
    if (!isPlainObject(map.env))
      r.problems.push(problem("teamfile.schema", [...at, "env"], "env must be a map of NAME: value", "write one `NAME: value` per line"));
    else {
      env = Object.create(null) as Record<string, string>;
      for (const [name, v] of Object.entries(map.env)) {
        const s = r.string(v, [...at, "env", name], `the value of ${name}`);
        if (s !== undefined) env[name] = s;
      }
    }
  }
  const files = map.files === undefined ? undefined : r.strings(map.files, [...at, "files"], "files");
  if (command === undefined) return undefined;
  // network is checked by the kernel (src/kernel/egress-context.ts), where the hash is made.
  const network = map.network !== undefined ? { network: map.network } : {};
  // So are the limits (src/kernel/start-limits.ts), also part of the hashed context.
  const limits = map.limits !== undefined ? { limits: map.limits } : {};
  // And containment (src/kernel/start-containment.ts): a deploy command has none of its own.
  const containment = level === "start" && map.containment !== undefined ? { containment: map.containment } : {};
  // And the restart policy (src/kernel/start-restart.ts): a deploy command runs once.
  const restart = level === "start" && map.restart !== undefined ? { restart: map.restart } : {};
  return {
    command,
    ...(workdir !== undefined ? { workdir } : {}),
    ...(env !== undefined ? { env } : {}),
    ...(files !== undefined ? { files } : {}),
    ...network,
    ...limits,
    ...containment,
    ...restart,
  };
}

function readSeat(r: Reader, value: unknown, at: InputPath): SeatInput {
  const map = r.map(value ?? {}, at, "seat");
  if (map === undefined) return {};
  const lab = map.lab === undefined ? undefined : r.string(map.lab, [...at, "lab"], "lab");
  const roles = map.roles === undefined ? undefined : r.strings(map.roles, [...at, "roles"], "roles");
  const start = map.start === undefined ? undefined : readStart(r, map.start, [...at, "start"]);
  return {
    ...(lab !== undefined ? { lab } : {}),
    ...(roles !== undefined ? { roles } : {}),
    ...(map.capabilities !== undefined ? { capabilities: map.capabilities as SeatInput["capabilities"] } : {}),
    ...(start !== undefined ? { start } : {}),
  };
}

/** Read the team file's data against the schema; every problem is collected. */
export function readTeamFileData(data: unknown, teamFilePath: string): SchemaResult {
  const r = new Reader();
  const top = r.map(data ?? null, [], "top");
  if (top === undefined) return { input: { version: undefined, team: "", teamFilePath }, problems: r.problems, blocking: true };
  let blocking = false;
  if (top.version === undefined) {
    r.problems.push(problem("teamfile.schema", [], "the team file pins no capability vocabulary version", "add `version: 1` at the top", "key"));
    blocking = true;
  } else if (typeof top.version !== "number") {
    r.problems.push(problem("teamfile.schema", ["version"], "version must be a number", "write `version: 1` (no quotes)"));
    blocking = true;
  }
  if (top.team === undefined) r.problems.push(problem("teamfile.schema", [], "the team file names no team", "add `team: <name>`", "key"));
  const team = top.team === undefined ? "" : (r.string(top.team, ["team"], "team") ?? "");
  const declareProblems = r.problems.length;
  const declare: Record<string, string[]> = {};
  if (top.declare !== undefined && top.declare !== null) {
    const map = r.map(top.declare, ["declare"], "declare");
    for (const [key, v] of Object.entries(map ?? {})) {
      const list = v === null ? [] : r.strings(v, ["declare", key], `declare.${key}`);
      if (list !== undefined) declare[key] = list;
    }
  }
  if (r.problems.length > declareProblems) blocking = true;
  // Name-keyed maps have no prototype: a role or seat called `__proto__` reaches the kernel's
  // name check (and is refused there) instead of vanishing into an assignment.
  const roles = Object.create(null) as Record<string, RoleInput>;
  for (const [name, role] of Object.entries(r.names(top.roles, ["roles"], "role"))) roles[name] = readRole(r, role, ["roles", name]);
  const seats = Object.create(null) as Record<string, SeatInput>;
  for (const [name, seat] of Object.entries(r.names(top.seats, ["seats"], "seat"))) seats[name] = readSeat(r, seat, ["seats", name]);
  // The constraint program and the review mode are read (and every value checked) by the kernel.
  const program = { ...(top.constraints !== undefined ? { constraints: top.constraints } : {}), ...(top.review !== undefined ? { review: top.review } : {}) };
  // So are the delegation settings (§7–§10): leads, the ceiling, the deny, two-granter.
  const delegation = {
    ...(top.leads !== undefined ? { leads: top.leads } : {}),
    ...(top.ceiling !== undefined ? { ceiling: top.ceiling } : {}),
    ...(top.deny !== undefined ? { deny: top.deny } : {}),
    ...(top["two-granter"] !== undefined ? { twoGranter: top["two-granter"] } : {}),
  };
  // Each environment's deploy command has a start's shape (§10): read structurally here, the
  // environment and every value checked by the kernel.
  let deploy: Record<string, StartInput> | undefined;
  if (top.deploy !== undefined && top.deploy !== null) {
    if (!isPlainObject(top.deploy))
      r.problems.push(
        problem(
          "teamfile.schema",
          ["deploy"],
          "deploy must be a map of environment → its command",
          "write each environment as `name:` with `command:` (and `files:`) indented under it",
        ),
      );
    else {
      deploy = Object.create(null) as Record<string, StartInput>;
      for (const [env, value] of Object.entries(top.deploy)) {
        // A push to the owner's remote (act-as, §3): its keys are checked here, its values by the kernel.
        if (isPlainObject(value) && (value.push !== undefined || value.account !== undefined)) {
          const map = r.map(value, ["deploy", env], "deploy");
          if (map !== undefined) deploy[env] = map as unknown as StartInput;
          continue;
        }
        const read = readStart(r, value, ["deploy", env], "deploy");
        if (read !== undefined) deploy[env] = read;
      }
    }
  }
  return {
    input: {
      version: top.version,
      team,
      declare,
      roles,
      seats,
      ...program,
      ...delegation,
      ...(deploy !== undefined ? { deploy } : {}),
      ...(top.trackers !== undefined ? { trackers: top.trackers } : {}),
      ...(top.accounts !== undefined ? { accountIdentities: top.accounts } : {}),
      teamFilePath,
    },
    problems: r.problems,
    blocking,
  };
}
