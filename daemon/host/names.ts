import { UsageError } from "../../src/rpc/errors.js";
/**
 * Team and seat names become parts of paths and record fields, so they are kept to a
 * small alphabet that cannot traverse, hide or collide: lower-case letters, digits and
 * inner dashes, starting with a letter, at most 32 characters.
 */
const NAME = /^[a-z](?:[a-z0-9-]{0,30}[a-z0-9])?$/;

export function checkName(kind: "team" | "seat", name: string): string {
  if (!NAME.test(name)) {
    throw new UsageError(`invalid ${kind} name '${name}': use 1-32 lower-case letters, digits and inner dashes, starting with a letter`);
  }
  return name;
}

/** Parse `SEAT` or `SEAT@TEAM` (debug seats; the team defaults to `debug`). */
export function parseSeatSpec(spec: string): { seat: string; team: string } {
  const [seat = "", team = "debug", extra] = spec.split("@");
  if (extra !== undefined) throw new UsageError(`invalid seat '${spec}': expected SEAT or SEAT@TEAM`);
  return { seat: checkName("seat", seat), team: checkName("team", team) };
}
