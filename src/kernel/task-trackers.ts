import type { DeclaredSets } from "./declared.js";
import { type InputPath, type PolicyProblem, problem } from "./policy-input.js";
import { isPlainObject } from "./records.js";

/**
 * The team file's `trackers:` map (§11): which owner-configured tracker serves each declared
 * task resource. It names trackers only — their credentials live in the owner's tracker
 * configuration outside every seat's view (src/broker/config.ts), never here. A task resource
 * the map does not name is served by the embedded default, a folder of Markdown tasks under
 * TEAMD_HOME. Part of the policy hash: rerouting a resource to another tracker is an owner act.
 */
export type TaskTrackers = Readonly<Record<string, string>>;

/** The shape of a tracker name in the owner's configuration. */
export const TRACKER_NAME = /^[a-z][a-z0-9_-]{0,62}$/;

export function readTaskTrackers(raw: unknown, declared: DeclaredSets, problems: PolicyProblem[]): TaskTrackers | undefined {
  if (raw === undefined || raw === null) return undefined;
  const at: InputPath = ["trackers"];
  if (!isPlainObject(raw)) {
    problems.push(
      problem(
        "teamfile.schema",
        at,
        "trackers must be a map of task resource → tracker name",
        'write e.g. `trackers: { "gh:web": web }`, the tracker configured by the owner in TEAMD_HOME/broker/trackers.json',
      ),
    );
    return undefined;
  }
  const out = Object.create(null) as Record<string, string>;
  for (const [task, value] of Object.entries(raw)) {
    const where = [...at, task];
    if (!declared.tasks.includes(task)) {
      problems.push(problem("teamfile.schema", where, `task resource '${task}' is not declared`, `add '${task}' to declare.tasks, or correct the name`, "key"));
      continue;
    }
    if (typeof value !== "string" || !TRACKER_NAME.test(value)) {
      problems.push(
        problem(
          "teamfile.schema",
          where,
          `the tracker of '${task}' must be a tracker name (lower-case letters, digits, '_' and '-', starting with a letter)`,
          "name a tracker of the owner's configuration; its credential stays there, never in the team file",
        ),
      );
      continue;
    }
    out[task] = value;
  }
  return Object.freeze(out);
}

/** Canonical form under the team file's own key, so the form loads again. */
export function canonicalTaskTrackers(trackers: TaskTrackers): Record<string, string> {
  const out: Record<string, string> = {};
  for (const task of Object.keys(trackers).sort()) out[task] = trackers[task] as string;
  return out;
}
