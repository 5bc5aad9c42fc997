import { describe, expect, it } from "vitest";
import { type LoadResult, loadTeamFileText } from "../../src/teamfile/index.js";
import { checkSeatLaunch } from "../../src/kernel/envelope-seats.js";

/**
 * The resource envelope's seats (§8; issue 27): `ceiling: { seats: { LAB: N } }` caps a lab's
 * live seats. Read and canonical (in the policy hash); a file declaring more seats of a lab than
 * its cap is refused `envelope.seats`; a launch while the lab's live seats reach the cap is
 * refused, counting each live seat as the lab it launched as.
 */
const file = (seats: string, cap: string) => `version: 1
team: web
declare:
  labs: [anthropic, openai]
review: { mode: distinct-seat }
${cap === "" ? "" : `ceiling:\n  seats: ${cap}\n`}seats:
${seats}`;
const seat = (name: string, lab: string) => `  ${name}:\n    lab: ${lab}\n    capabilities: { read: ~ }\n    start:\n      command: [claude]\n`;

function loaded(result: LoadResult) {
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result;
}
function errors(result: LoadResult): string {
  return result.ok ? "" : result.errors.map((e) => `${e.rule}: ${e.message}`).join("\n");
}

describe("ceiling seats", () => {
  it("reads a cap per lab, and it is part of the policy hash", () => {
    const capped = loaded(loadTeamFileText(file(seat("a", "anthropic"), "{ anthropic: 1, openai: 0 }")));
    expect(capped.policy.ceiling?.seats).toEqual({ anthropic: 1, openai: 0 });
    const uncapped = loaded(loadTeamFileText(file(seat("a", "anthropic"), "")));
    expect(uncapped.policy.ceiling).toBeUndefined();
    expect(capped.hashes.policy).not.toEqual(uncapped.hashes.policy);
    expect(loaded(loadTeamFileText(file(seat("a", "anthropic"), "{ anthropic: 2, openai: 0 }"))).hashes.policy).not.toEqual(capped.hashes.policy);
  });

  it.each([
    [
      "more seats of a lab than its cap",
      file(seat("a", "anthropic") + seat("b", "anthropic"), "{ anthropic: 1 }"),
      /envelope\.seats: the file declares 2 seat\(s\) of lab anthropic \(a, b\) and the ceiling caps it at 1/,
    ],
    ["a seat of a lab capped at 0", file(seat("a", "openai"), "{ openai: 0 }"), /envelope\.seats: .*lab openai \(a\).* at 0/],
    ["an undeclared lab", file(seat("a", "anthropic"), "{ google: 1 }"), /lab 'google' is not declared/],
    ["a negative cap", file(seat("a", "anthropic"), "{ anthropic: -1 }"), /'-1' is not a number of seats/],
    ["a fraction", file(seat("a", "anthropic"), "{ anthropic: 1.5 }"), /'1.5' is not a number of seats/],
    ["a list", file(seat("a", "anthropic"), "[anthropic]"), /seats is a map of lab to a number of seats/],
  ])("refuses %s, naming the fix", (_name, text, message) => {
    expect(errors(loadTeamFileText(text))).toMatch(message);
  });

  it("a launch is refused when the lab's live seats reach its cap; other labs, uncapped labs and the seat itself do not count", () => {
    const { policy } = loaded(loadTeamFileText(file(seat("a", "anthropic") + seat("c", "openai"), "{ anthropic: 1 }")));
    const CASES: [string, string, { seat: string; lab: string | undefined }[], string | undefined][] = [
      ["nothing live", "a", [], undefined],
      ["a seat of the lab live (renamed away since)", "a", [{ seat: "old", lab: "anthropic" }], "envelope.seats"],
      ["its own run (a restart's bookkeeping)", "a", [{ seat: "a", lab: "anthropic" }], undefined],
      ["another lab live", "a", [{ seat: "c", lab: "openai" }], undefined],
      [
        "an uncapped lab",
        "c",
        [
          { seat: "x", lab: "openai" },
          { seat: "y", lab: "openai" },
        ],
        undefined,
      ],
      ["a seat not in the policy", "zzz", [{ seat: "old", lab: "anthropic" }], undefined],
    ];
    for (const [name, who, live, rule] of CASES) expect(checkSeatLaunch(policy, who, live)?.rule, name).toBe(rule);
    expect(checkSeatLaunch(policy, "a", [{ seat: "old", lab: "anthropic" }])?.reason).toMatch(/at most 1 live seat\(s\).* 1 run: old; stop one first/);
  });
});
