import { type InputPath, type PolicyProblem, problem } from "./policy-input.js";

/**
 * A seat's containment (`start.containment` in the team file): how its command runs on the
 * host. `bwrap` is the platform's containment (bubblewrap on Linux) and the default; `none`
 * is the owner's explicit word that the seat runs uncontained — it can read and write
 * everything its host user can, so every refusal teamd makes for it holds against a mistake
 * only (M), and every record of the seat says so.
 *
 * Part of the pinned execution context (§10): a seat switched to `none` is a different seat,
 * never a silent change, so it needs the owner's apply. Only `none` enters the hash: the
 * default, written or not, is the same context (a seat keeps the hash it had before this
 * field existed). Pure: parsing only.
 */
export type Containment = "bwrap" | "none";

export const CONTAINMENTS: readonly Containment[] = ["bwrap", "none"];

/** The value as written; `bwrap` (the default) reads as undefined, so it never changes a hash. */
export function readContainment(value: unknown, at: InputPath, problems: PolicyProblem[]): "none" | undefined {
  if (value === "none") return "none";
  if (value === "bwrap") return undefined;
  problems.push(
    problem(
      "teamfile.schema",
      at,
      `containment: '${typeof value === "string" ? value : JSON.stringify(value)}' is not a containment teamd knows`,
      `start.containment takes: ${CONTAINMENTS.join(", ")} (bwrap, the default, is bubblewrap on Linux; none runs the seat uncontained, holding against a mistake only)`,
    ),
  );
  return undefined;
}

/** For diffs and status. */
export function showContainment(containment: "none" | undefined): Containment {
  return containment ?? "bwrap";
}
