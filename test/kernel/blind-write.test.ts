import { describe, expect, it } from "vitest";
import { blindWriteRefusal, createKernelView, type Policy } from "../../src/kernel/index.js";
import { loadTeamFileText } from "../../src/teamfile/index.js";

/**
 * A write over what the seat cannot see (src/kernel/blind-write.ts): as a folder, the point;
 * as a file, the whole of the path — its point allowed, no deny and no ceiling narrowing
 * anywhere under it, no reserved object under it. A table of cases: a policy, a seat, a path,
 * a shape, the rule (or undefined for an allow). The answer comes from the policy and the path
 * only; there is no hub in this test to consult.
 */
const NOW = 1_800_000_000_000;

function policyOf(body: string): Policy {
  const loaded = loadTeamFileText(`version: 1\nteam: web\n${body}`);
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
  return loaded.policy;
}

const SEATS = `seats:
  wo:
    capabilities: { read: { path: [src/] }, write: { path: [src/, docs/] } }
  exact:
    capabilities: { write: { path: [docs/notes/a.md] } }
  none:
    capabilities: { read: ~ }
`;
const PLAIN = policyOf(SEATS);
const DENIED = policyOf(`deny:\n  write: { path: [docs/keep/] }\n${SEATS}`);
const CEILED = policyOf(`ceiling:\n  capabilities:\n    write: { path: [docs/open/, src/] }\n    read: ~\n${SEATS}`);
const PINNED: Policy = { ...PLAIN, reserved: { ...PLAIN.reserved, startFiles: ["docs/tools/start.sh"] } };

describe("blindWriteRefusal", () => {
  it.each([
    // description, policy, seat, path, shape, rule
    ["a folder where write reaches", PLAIN, "wo", "docs", "folder", undefined],
    ["a file over all of a path write reaches", PLAIN, "wo", "docs", "file", undefined],
    ["a file deep inside write", PLAIN, "wo", "docs/a/b.md", "file", undefined],
    ["a folder beside write", PLAIN, "wo", "lib", "folder", "scope.path"],
    ["a folder above an exact write: the name itself is not written", PLAIN, "exact", "docs/notes", "folder", "scope.path"],
    ["the exact path itself, as a file", PLAIN, "exact", "docs/notes/a.md", "file", undefined],
    ["a seat without write", PLAIN, "none", "docs", "folder", "authority.none"],
    ["a folder above a deny: the point is not denied", DENIED, "wo", "docs", "folder", undefined],
    ["a file above a deny: it would take what the deny keeps", DENIED, "wo", "docs", "file", "deny.match"],
    ["a file inside the deny", DENIED, "wo", "docs/keep/x", "file", "deny.match"],
    ["a file beside the deny", DENIED, "wo", "docs/other", "file", undefined],
    ["a file over a folder the ceiling reaches only part of", CEILED, "wo", "docs", "file", "ceiling.outside"],
    ["a folder at a point outside the ceiling", CEILED, "wo", "docs", "folder", "ceiling.outside"],
    ["a file within one ceiling entry", CEILED, "wo", "docs/open/x", "file", undefined],
    ["a file over a folder holding a pinned start file", PINNED, "wo", "docs/tools", "file", "reserved.object"],
    ["a folder at the pinned start file's own folder: only a file of that name could go", PINNED, "wo", "docs/tools", "folder", undefined],
    ["a folder at the pinned start file itself", PINNED, "wo", "docs/tools/start.sh", "folder", "reserved.object"],
    ["a folder inside .git", PLAIN, "wo", "docs/.git", "folder", "reserved.object"],
    ["a file beside the pinned start file", PINNED, "wo", "docs/tool", "file", undefined],
  ] as const)("%s", (_description, policy, seat, path, as, rule) => {
    const refusal = blindWriteRefusal(createKernelView(policy), seat, path, as, NOW);
    expect(refusal?.rule).toBe(rule);
  });

  it("asks nothing of the repository: the same answer for any path of the same shape against the same policy, every time", () => {
    const view = createKernelView(DENIED);
    const first = ["docs/a", "docs/keep", "docs"].map((p) => blindWriteRefusal(view, "wo", p, "file", NOW)?.reason);
    const again = ["docs/a", "docs/keep", "docs"].map((p) => blindWriteRefusal(view, "wo", p, "file", NOW)?.reason);
    expect(again).toEqual(first);
    expect(first[2]).toMatch(/a blind write over all of the path's scope \{path: \[docs\]\} meets the owner's deny write/);
  });
});
