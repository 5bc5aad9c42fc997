import { describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import { canonicalJson, readScope, type Policy } from "../../src/kernel/index.js";
import { readFilter, readIsUnbounded } from "../../src/effects/read-filter.js";
import { loadTeamFileText } from "../../src/teamfile/index.js";

/**
 * A seat's read filter (src/effects/read-filter.ts): the kernel's read-scope verdicts
 * (test/kernel/read-scope.test.ts has their table) plus the filter's id, a SHA-256 of what
 * those verdicts depend on — a mirror made under another id is rebuilt, so the id must move
 * exactly when the scope does.
 */
const NOW = 1_800_000_000_000;

function policyOf(body: string): Policy {
  const loaded = loadTeamFileText(`version: 1\nteam: web\n${body}`);
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
  return loaded.policy;
}

const SEATS = `seats:
  whole:
    capabilities: { read: ~ }
  some:
    capabilities: { read: { path: [src/, docs/guide] } }
  other:
    capabilities: { read: { path: [src/, docs/guide] }, write: { path: [src/] } }
  narrower:
    capabilities: { read: { path: [src/] } }
`;
const PLAIN = policyOf(SEATS);
const DENIED = policyOf(`deny:\n  read: { path: [src/secret/] }\n${SEATS}`);
const CEILED = policyOf(`ceiling:\n  capabilities:\n    read: { path: [src/] }\n${SEATS}`);

function seat(policy: Policy, name: string) {
  const found = policy.seats[name];
  if (found === undefined) throw new Error(`no seat ${name}`);
  return found;
}

/** The id as the filter has always made it: the hash of the canonical read scope. */
function expectedId(policy: Policy, name: string): string {
  const prefixes = (seat(policy, name).byCapability.read ?? []).map((a) => a.scope.path ?? { state: "unconstrained" as const });
  const text = canonicalJson({
    prefixes: prefixes as never,
    deny: (policy.deny ?? []) as never,
    ceiling: (policy.ceiling?.capabilities?.read ?? null) as never,
    reserved: policy.reserved as never,
  });
  return createHash("sha256").update(text).digest("hex");
}

describe("readFilter", () => {
  it.each([
    ["bounded paths", PLAIN, "some"],
    ["an unconstrained read under a deny", DENIED, "whole"],
    ["an unconstrained read under the ceiling", CEILED, "whole"],
  ] as const)("its id is the hash of the read scope: %s", (_description, policy, name) => {
    const filter = readFilter(policy, seat(policy, name), NOW);
    expect(filter.id).toMatch(/^[0-9a-f]{64}$/);
    expect(filter.id).toBe(expectedId(policy, name));
  });

  it.each([
    ["the same scope of another seat (other capabilities do not count)", PLAIN, "some", PLAIN, "other", true],
    ["the same scope in a policy loaded again", PLAIN, "some", policyOf(SEATS), "some", true],
    ["narrower read prefixes", PLAIN, "some", PLAIN, "narrower", false],
    ["a read deny added", PLAIN, "some", DENIED, "some", false],
    ["the ceiling's read added", PLAIN, "some", CEILED, "some", false],
  ] as const)("id: %s", (_description, a, seatA, b, seatB, same) => {
    const ida = readFilter(a, seat(a, seatA), NOW).id;
    const idb = readFilter(b, seat(b, seatB), NOW).id;
    expect(ida === idb).toBe(same);
  });

  it.each([
    ["some", PLAIN],
    ["whole", DENIED],
    ["some", CEILED],
  ] as const)("gives the kernel's verdict for every path and folder (seat %s)", (name, policy) => {
    const filter = readFilter(policy, seat(policy, name), NOW);
    const kernel = readScope(policy, seat(policy, name), NOW);
    for (const path of ["src/a.ts", "src/secret/key", "docs/guide", "docs/guidebook", "lib/x", "teamd.yaml"]) expect(filter.file(path)).toBe(kernel.file(path));
    for (const dir of ["src", "src/secret", "docs", "lib"]) expect(filter.dir(dir)).toBe(kernel.dir(dir));
  });

  it("is needed only when the read is bounded (readIsUnbounded, from the kernel)", () => {
    expect(readIsUnbounded(PLAIN, seat(PLAIN, "whole"))).toBe(true);
    expect(readIsUnbounded(PLAIN, seat(PLAIN, "some"))).toBe(false);
    expect(readIsUnbounded(DENIED, seat(DENIED, "whole"))).toBe(false);
  });
});
