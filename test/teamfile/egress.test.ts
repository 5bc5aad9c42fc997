import { describe, expect, it } from "vitest";
import { type LoadResult, loadTeamFileText } from "../../src/teamfile/index.js";

/**
 * start.network (§10, §12): a seat's allowed egress is part of its pinned execution context —
 * validated with the line and a fix, canonical, and inside the start-context hash, so a
 * widened allowlist is a different seat.
 */
const file = (network: string, lab = "anthropic") => `version: 1
team: web
declare:
  labs: [anthropic, openai]
seats:
  a:
    lab: ${lab}
    capabilities: { read: ~ }
    start:
      command: [claude]
${network
  .split("\n")
  .filter((l) => l !== "")
  .map((l) => `      ${l}`)
  .join("\n")}
`;

function loaded(result: LoadResult) {
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result;
}

describe("start.network in the team file", () => {
  it("is accepted, canonical, and adds the lab's endpoints", () => {
    const result = loaded(loadTeamFileText(file(`network:\n  allow: ["Registry.NPMJS.org:443", "*.example.com:8443"]\n  private: [10.1.2.3/8]`)));
    expect(result.policy.seats.a?.start?.network).toEqual({
      allow: ["*.example.com:8443", "api.anthropic.com:443", "platform.claude.com:443", "registry.npmjs.org:443"],
      private: ["10.0.0.0/8"],
    });
  });

  it("leaves the lab's endpoints out with lab: false; an empty map allows only the lab's", () => {
    expect(loaded(loadTeamFileText(file(`network:\n  lab: false\n  allow: ["a.example.com:443"]`))).policy.seats.a?.start?.network?.allow).toEqual([
      "a.example.com:443",
    ]);
    expect(loaded(loadTeamFileText(file(`network: {}`, "openai"))).policy.seats.a?.start?.network?.allow).toEqual([
      "api.openai.com:443",
      "auth.openai.com:443",
      "chatgpt.com:443",
    ]);
  });

  it("is in the start-context hash: widening the allowlist changes it, a seat without network keeps its own", () => {
    const none = loaded(loadTeamFileText(file(""))).hashes.seats.a?.context;
    const one = loaded(loadTeamFileText(file(`network:\n  allow: ["a.example.com:443"]`))).hashes.seats.a?.context;
    const two = loaded(loadTeamFileText(file(`network:\n  allow: ["a.example.com:443", "b.example.com:443"]`))).hashes.seats.a?.context;
    const ranged = loaded(loadTeamFileText(file(`network:\n  allow: ["a.example.com:443"]\n  private: [127.0.0.1/32]`))).hashes.seats.a?.context;
    expect(new Set([none, one, two, ranged]).size).toBe(4);
    expect(loaded(loadTeamFileText(file(""))).policy.seats.a?.start?.network).toBeUndefined();
  });

  it.each([
    ["a pattern without a port", `network:\n  allow: ["api.example.com"]`, /host:port/, 12],
    ["a wildcard over a top-level domain", `network:\n  allow: ["*.com:443"]`, /top-level/, 12],
    ["a port out of range", `network:\n  allow: ["a.example.com:70000"]`, /between 1 and 65535/, 12],
    ["a range that is not a CIDR", `network:\n  private: [10.0.0.0/40]`, /not a CIDR/, 12],
    ["an unknown key", `network:\n  hosts: ["a.example.com:443"]`, /unknown key 'hosts'/, 12],
    ["lab that is not a boolean", `network:\n  lab: "no"`, /true or false/, 12],
    ["a list instead of a map", `network: ["a.example.com:443"]`, /must be a map/, 11],
  ])("refuses %s, with its line and a fix", (_what, network, message, line) => {
    const result = loadTeamFileText(file(network));
    expect(result.ok).toBe(false);
    if (result.ok) return;
    const hit = result.errors.find((e) => message.test(e.message));
    expect(hit, JSON.stringify(result.errors)).toBeDefined();
    expect(hit?.rule).toBe("teamfile.schema");
    expect(hit?.line).toBe(line);
    expect(hit?.fix.length).toBeGreaterThan(0);
  });
});
