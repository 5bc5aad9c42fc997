import { describe, expect, it } from "vitest";
import { type LoadResult, loadTeamFileText } from "../../src/teamfile/index.js";
import { restartBackoffMs } from "../../src/kernel/start-restart.js";

/** start.restart (issue 22): read, canonical, in the start-context hash; a bad value names its line and fix. */
const file = (restart: string) => `version: 1
team: web
declare:
  labs: [anthropic]
seats:
  a:
    lab: anthropic
    capabilities: { read: ~ }
    start:
      command: [claude]
${restart === "" ? "" : `      restart: ${restart}\n`}`;

function loaded(result: LoadResult) {
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result;
}

describe("start.restart", () => {
  it.each([
    ["on-failure", { when: "on-failure", retries: 5 }],
    ["always", { when: "always", retries: 5 }],
    ["{ when: on-failure, retries: 12 }", { when: "on-failure", retries: 12 }],
  ])("reads %s", (text, expected) => {
    expect(loaded(loadTeamFileText(file(text))).policy.seats.a?.start?.restart).toEqual(expected);
  });

  it("never is the default: the same seat, the same hash, as declaring none", () => {
    const none = loaded(loadTeamFileText(file("")));
    const never = loaded(loadTeamFileText(file("never")));
    expect(never.policy.seats.a?.start?.restart).toBeUndefined();
    expect(never.hashes.seats.a?.context).toBe(none.hashes.seats.a?.context);
    expect(loaded(loadTeamFileText(file("on-failure"))).hashes.seats.a?.context).not.toBe(none.hashes.seats.a?.context);
  });

  it.each([
    ["sometimes", /not a restart policy/],
    ["{ when: often }", /restart.when/],
    ["{ when: always, retries: 0 }", /retries must be a whole number from 1 to 100/],
    ["{ when: always, tries: 3 }", /unknown key 'tries'/],
  ])("refuses %s, naming the fix", (text, message) => {
    const result = loadTeamFileText(file(text));
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors.map((e) => e.message).join("\n")).toMatch(message);
  });

  it("backs off 1 s, doubling, up to a minute", () => {
    expect([1, 2, 3, 6, 7, 50].map(restartBackoffMs)).toEqual([1000, 2000, 4000, 32000, 60000, 60000]);
  });
});
