import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { type LoadResult, loadTeamFileData, loadTeamFileText } from "../../src/teamfile/index.js";

/**
 * What the owner signs is the policy's canonical form; the daemon reads that form back and
 * checks its hash (daemon/owner/acts.ts). So load → canonical → load must be the identity for
 * every documented start key and value — `lab: false`, empty lists, defaults included — or a
 * valid team file cannot be applied (issue 22: `lab: false` was dropped from the canonical
 * form, the reload added the lab's endpoints again, and apply failed `owner.act-invalid`).
 */
function loaded(result: LoadResult) {
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result;
}

const network = fc.option(
  fc.record(
    {
      lab: fc.boolean(),
      allow: fc.subarray(["a.example.com:443", "*.npmjs.org:443", "10.0.0.7:5432", "[::1]:8080", "API.Anthropic.com:443"]),
      private: fc.subarray(["10.0.0.0/8", "127.0.0.1/32", "fd00::/8"]),
    },
    { requiredKeys: [] },
  ),
  { nil: undefined },
);
const limits = fc.option(
  fc.oneof(
    fc.constant("none" as const),
    fc.record(
      {
        memory: fc.constantFrom("16M", "512M", "2G"),
        processes: fc.integer({ min: 16, max: 4096 }),
        cpus: fc.constantFrom(0.5, 1, 1.5),
        "open-files": fc.constantFrom(256, 4096),
      },
      { requiredKeys: [] },
    ),
  ),
  { nil: undefined },
);
const start = fc.record(
  {
    command: fc.constantFrom(["claude"], ["codex", "--full-auto"], ["sh", "-c", "echo hi"]),
    workdir: fc.constantFrom(".", "src", "a/b"),
    env: fc.dictionary(fc.constantFrom("A", "B_2", "PATH_EXTRA"), fc.constantFrom("", "x", "a b")),
    files: fc.constant([] as string[]),
    network,
    limits,
    containment: fc.option(fc.constantFrom("bwrap", "none"), { nil: undefined }),
    restart: fc.option(
      fc.oneof(
        fc.constantFrom("never", "on-failure", "always"),
        fc.record({ when: fc.constantFrom("never", "on-failure", "always"), retries: fc.integer({ min: 1, max: 100 }) }, { requiredKeys: ["when"] }),
      ),
      { nil: undefined },
    ),
  },
  { requiredKeys: ["command"] },
);

function teamFile(seatStart: Record<string, unknown>, lab: string | undefined): string {
  const clean = Object.fromEntries(Object.entries(seatStart).filter(([, v]) => v !== undefined));
  return stringify({
    version: 1,
    team: "web",
    declare: { labs: ["anthropic", "openai", "google"] },
    seats: { a: { ...(lab !== undefined ? { lab } : {}), capabilities: { read: null }, start: clean } },
  });
}

describe("load → canonical → load", () => {
  it("is the identity for every documented start key and value", () => {
    fc.assert(
      fc.property(start, fc.option(fc.constantFrom("anthropic", "openai", "google"), { nil: undefined }), (s, lab) => {
        const first = loaded(loadTeamFileText(teamFile(s, lab)));
        const again = loaded(loadTeamFileData(JSON.parse(first.canonical), { startFileHashes: {} }));
        expect(again.canonical).toBe(first.canonical);
        expect(again.hashes).toEqual(first.hashes);
        expect(again.policy.seats.a?.start).toEqual(first.policy.seats.a?.start);
      }),
      { numRuns: 300 },
    );
  });

  it("keeps lab: false (the case that broke teamd apply)", () => {
    const first = loaded(loadTeamFileText(teamFile({ command: ["claude"], network: { lab: false, allow: ["a.example.com:443"] } }, "anthropic")));
    const again = loaded(loadTeamFileData(JSON.parse(first.canonical), { startFileHashes: {} }));
    expect(again.policy.seats.a?.start?.network?.allow).toEqual(["a.example.com:443"]);
    expect(again.hashes.policy).toEqual(first.hashes.policy);
  });
});
