import { describe, expect, it } from "vitest";
import { readIsUnbounded, readScope, readScopeKey, type Policy } from "../../src/kernel/index.js";
import { loadTeamFileText } from "../../src/teamfile/index.js";

/**
 * Read scope (src/kernel/read-scope.ts): whether a seat's read is unbounded (a full clone) and,
 * when it is not, the per-path verdicts its filtered history is built from. Tables of cases:
 * a policy, a seat, the expected answers.
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
  deep:
    capabilities: { read: { path: [src/deep/] } }
  none:
    capabilities: { write: { path: [out/] } }
`;
const PLAIN = policyOf(SEATS);
const DENIED = policyOf(`deny:\n  read: { path: [src/secret/] }\n${SEATS}`);
const DENIED_WRITE = policyOf(`deny:\n  write: { path: [src/] }\n${SEATS}`);
const CEILED = policyOf(`ceiling:\n  capabilities:\n    read: { path: [src/] }\n${SEATS}`);

function seat(policy: Policy, name: string) {
  const found = policy.seats[name];
  if (found === undefined) throw new Error(`no seat ${name}`);
  return found;
}

describe("readIsUnbounded", () => {
  it.each([
    ["an unconstrained read", PLAIN, "whole", true],
    ["a deny on another capability leaves it unbounded", DENIED_WRITE, "whole", true],
    ["bounded paths", PLAIN, "some", false],
    ["no read at all", PLAIN, "none", false],
    ["a read deny narrows it", DENIED, "whole", false],
    ["the ceiling's read narrows it", CEILED, "whole", false],
  ] as const)("%s", (_description, policy, name, expected) => {
    expect(readIsUnbounded(policy, seat(policy, name))).toBe(expected);
  });
});

describe("readScope: the per-path verdicts", () => {
  it.each([
    // description, policy, seat, path, file verdict
    ["a file inside an unconstrained read", PLAIN, "whole", "lib/a.ts", true],
    ["the team file (reserved)", PLAIN, "whole", "teamd.yaml", false],
    ["a file under a read prefix", PLAIN, "some", "src/a.ts", true],
    ["a file named exactly as a prefix", PLAIN, "some", "docs/guide", true],
    ["a file beside the prefixes", PLAIN, "some", "lib/a.ts", false],
    ["a file whose name only starts like a prefix", PLAIN, "some", "docs/guidebook", false],
    ["no read capability", PLAIN, "none", "src/a.ts", false],
    ["a denied file", DENIED, "whole", "src/secret/key", false],
    ["beside the denied folder", DENIED, "whole", "src/open.ts", true],
    ["inside the ceiling", CEILED, "whole", "src/a.ts", true],
    ["outside the ceiling", CEILED, "whole", "docs/a.md", false],
  ] as const)("file: %s", (_description, policy, name, path, expected) => {
    expect(readScope(policy, seat(policy, name), NOW).file(path)).toBe(expected);
  });

  it.each([
    // description, policy, seat, folder, dir verdict
    ["a folder of an unconstrained read", PLAIN, "whole", "lib", "all"],
    ["a folder under a prefix", PLAIN, "some", "src/sub", "all"],
    ["a folder that is a prefix", PLAIN, "some", "src", "all"],
    ["a folder above a prefix", PLAIN, "some", "docs", "some"],
    ["a folder above a deeper prefix", PLAIN, "deep", "src", "some"],
    ["a folder beside every prefix", PLAIN, "some", "lib", "none"],
    ["any folder without read", PLAIN, "none", "src", "none"],
    ["a folder a deny reaches inside", DENIED, "whole", "src", "some"],
    ["the denied folder itself", DENIED, "whole", "src/secret", "some"],
    ["a folder the deny does not reach", DENIED, "whole", "lib", "all"],
    ["a folder under the ceiling (the ceiling narrows everywhere: file by file)", CEILED, "whole", "src", "some"],
    ["a folder outside the ceiling", CEILED, "some", "lib", "none"],
  ] as const)("dir: %s", (_description, policy, name, path, expected) => {
    expect(readScope(policy, seat(policy, name), NOW).dir(path)).toBe(expected);
  });
});

describe("readScopeKey", () => {
  it("is the same for seats that read alike and differs when anything that narrows read differs", () => {
    const again = policyOf(SEATS);
    expect(readScopeKey(again, seat(again, "some"))).toBe(readScopeKey(PLAIN, seat(PLAIN, "some")));
    const keys = [
      readScopeKey(PLAIN, seat(PLAIN, "some")),
      readScopeKey(PLAIN, seat(PLAIN, "whole")),
      readScopeKey(PLAIN, seat(PLAIN, "deep")),
      readScopeKey(DENIED, seat(DENIED, "some")),
      readScopeKey(CEILED, seat(CEILED, "some")),
    ];
    expect(new Set(keys).size).toBe(keys.length);
  });
});
