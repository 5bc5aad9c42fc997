import { type InputPath, type PolicyProblem, problem } from "./policy-input.js";
import { isPlainObject } from "./records.js";

/**
 * A seat's restart policy (`start.restart` in the team file, issue 22): whether teamd starts
 * a seat's command again when its run ends by itself. `on-failure` restarts a run that crashed
 * or ended with a non-zero exit; `always` one that ended in any way by itself. Neither ever
 * restarts a run that was stopped — by the owner, leads, a stop flag or a bound — nor one that
 * is frozen, paused or suspended; and every restart is a new run that obeys every stop flag and
 * refusal a start obeys. Bounded: at most `retries` restarts in a row (a run that lived a
 * minute resets the count), each after a back-off that doubles from 1 s up to a minute.
 *
 * Part of the pinned execution context (§10): a seat that restarts itself is a different seat
 * from one that does not, so it needs the owner's apply. `never` (the default) reads as
 * undefined, so a seat that declares none keeps its hash. Pure: parsing only.
 */
export type RestartWhen = "on-failure" | "always";

export interface StartRestart {
  readonly when: RestartWhen;
  /** Restarts in a row before teamd gives up (a run that lived RESTART_RESET_MS resets the count). */
  readonly retries: number;
}

export const RESTART_WHENS = ["never", "on-failure", "always"] as const;
export const RESTART_DEFAULT_RETRIES = 5;
export const RESTART_MAX_RETRIES = 100;
/** The first back-off; each next one doubles, up to RESTART_BACKOFF_MAX_MS. */
export const RESTART_BACKOFF_MS = 1_000;
export const RESTART_BACKOFF_MAX_MS = 60_000;
/** A run that lived this long ended "in a row" of none: the next restart counts from one again. */
export const RESTART_RESET_MS = 60_000;

const FIX = "write `restart: on-failure` (or always, never), or `restart: { when: on-failure, retries: 5 }`";

export function readRestart(value: unknown, at: InputPath, problems: PolicyProblem[]): StartRestart | undefined {
  if (value === "never") return undefined;
  if (value === "on-failure" || value === "always") return Object.freeze({ when: value, retries: RESTART_DEFAULT_RETRIES });
  if (!isPlainObject(value)) {
    problems.push(problem("teamfile.schema", at, `restart: ${JSON.stringify(value)} is not a restart policy`, FIX));
    return undefined;
  }
  const before = problems.length;
  for (const key of Object.keys(value)) {
    if (key !== "when" && key !== "retries")
      problems.push(problem("teamfile.schema", [...at, key], `unknown key '${key}' in restart`, "restart takes: when, retries", "key"));
  }
  const when = value.when;
  if (!RESTART_WHENS.includes(when as (typeof RESTART_WHENS)[number])) {
    problems.push(problem("teamfile.schema", [...at, "when"], `restart.when: ${JSON.stringify(when)} is not one of ${RESTART_WHENS.join(", ")}`, FIX));
  }
  const retries = value.retries === undefined ? RESTART_DEFAULT_RETRIES : value.retries;
  if (typeof retries !== "number" || !Number.isInteger(retries) || retries < 1 || retries > RESTART_MAX_RETRIES) {
    problems.push(problem("teamfile.schema", [...at, "retries"], `restart.retries must be a whole number from 1 to ${RESTART_MAX_RETRIES}`, FIX));
  }
  if (problems.length > before || when === "never") return undefined;
  return Object.freeze({ when: when as RestartWhen, retries: retries as number });
}

/** The canonical form (always the map, retries written), for the policy and the context hash. */
export function canonicalRestart(restart: StartRestart): { when: RestartWhen; retries: number } {
  return { when: restart.when, retries: restart.retries };
}

/** The back-off before restart number `attempt` (1-based): 1 s, 2 s, 4 s, … up to a minute. */
export function restartBackoffMs(attempt: number): number {
  return Math.min(RESTART_BACKOFF_MAX_MS, RESTART_BACKOFF_MS * 2 ** Math.max(0, Math.min(attempt - 1, 30)));
}

/** For diffs and status. */
export function showRestart(restart: StartRestart | undefined): string {
  return restart === undefined ? "never" : `${restart.when} (at most ${restart.retries} in a row)`;
}
