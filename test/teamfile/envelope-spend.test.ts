import { describe, expect, it } from "vitest";
import { type LoadResult, loadTeamFileData, loadTeamFileText } from "../../src/teamfile/index.js";
import { parseAmount } from "../../src/kernel/spend-input.js";

/**
 * `ceiling.spend` (§8; issue 28): read whole or refused naming the key and the fix; amounts held
 * as integer minor units (no float rounds a cap); part of the policy hash like every ceiling.
 */
const file = (spend: string) => `version: 1
team: web
declare:
  labs: [anthropic, openai]
review: { mode: distinct-seat }
ceiling:
  spend:
${spend
  .split("\n")
  .map((l) => `    ${l}`)
  .join("\n")}
seats:
  a:
    lab: anthropic
    capabilities: { read: ~ }
`;
const GOOD = "currency: USD\nperiod: 1d\ntotal: 50\nlabs: { anthropic: 30.5 }\nper-dispatch: 2.25\nstale-after: 10m";

function errors(result: LoadResult): string {
  return result.ok ? "" : result.errors.map((e) => `${e.rule} ${e.at}: ${e.message}; ${e.fix}`).join("\n");
}

describe("ceiling spend", () => {
  it("reads the block into minor units, and it is part of the policy hash", () => {
    const result = loadTeamFileText(file(GOOD));
    if (!result.ok) throw new Error(errors(result));
    expect(result.policy.ceiling?.spend).toEqual({
      currency: "USD",
      period: { kind: "fixed", ms: 86_400_000 },
      total: 5000,
      labs: { anthropic: 3050 },
      perDispatch: 225,
      staleAfterMs: 600_000,
    });
    const other = loadTeamFileText(file(GOOD.replace("total: 50", "total: 51")));
    if (!other.ok) throw new Error(errors(other));
    expect(other.hashes.policy).not.toEqual(result.hashes.policy);
    // What the owner signs is the canonical form, and it loads back the same.
    const again = loadTeamFileData(JSON.parse(result.canonical) as unknown, { startFileHashes: {} });
    if (!again.ok) throw new Error(errors(again));
    expect(again.policy.ceiling?.spend).toEqual(result.policy.ceiling?.spend);
    expect(again.hashes.policy).toEqual(result.hashes.policy);
    const month = loadTeamFileText(file("currency: EUR\nperiod: month\ntotal: '0.75'\nper-dispatch: 0.75"));
    if (!month.ok) throw new Error(errors(month));
    expect(month.policy.ceiling?.spend).toMatchObject({ period: { kind: "month" }, total: 75, perDispatch: 75, staleAfterMs: 3_600_000 });
  });

  it.each([
    ["a spend that is not a map", "100", /spend is a map/],
    ["an unknown key", `${GOOD}\nrollover: yes`, /unknown key 'rollover' in spend/],
    ["a currency that is not a code", GOOD.replace("USD", "dollars"), /not a currency code/],
    ["a period shorter than an hour", GOOD.replace("period: 1d", "period: 30m"), /not a spend period.*1h to 31d/],
    ["a period past 31 days", GOOD.replace("period: 1d", "period: 40d"), /not a spend period/],
    ["an amount with three decimals", GOOD.replace("total: 50", "total: 50.001"), /'50.001' is not an amount/],
    ["a negative amount", GOOD.replace("total: 50", "total: -5"), /'-5' is not an amount/],
    ["an amount in words", GOOD.replace("total: 50", "total: lots"), /'lots' is not an amount/],
    ["no total", GOOD.replace("total: 50\n", ""), /'undefined' is not an amount/],
    ["a per-dispatch of 0", GOOD.replace("per-dispatch: 2.25", "per-dispatch: 0"), /per-dispatch is 0/],
    ["a per-dispatch past the total", GOOD.replace("per-dispatch: 2.25", "per-dispatch: 60"), /no dispatch could ever be reserved/],
    ["a lab not declared", GOOD.replace("anthropic: 30.5", "google: 1"), /lab 'google' is not declared/],
    ["a stale-after that is not a duration", GOOD.replace("stale-after: 10m", "stale-after: soon"), /'soon' is not a duration/],
  ])("refuses %s, naming it", (_name, spend, message) => {
    const result = loadTeamFileText(file(spend));
    expect(result.ok).toBe(false);
    expect(errors(result)).toMatch(message);
    expect(errors(result)).toMatch(/^teamfile\.schema /m);
  });

  it.each([
    [50, 5000],
    ["12.5", 1250],
    [12.5, 1250],
    ["0.07", 7],
    [0.1, 10],
    ["1e3", undefined],
    [Number.NaN, undefined],
    ["99999999999", undefined],
  ])("reads the amount %s as %s minor units", (value, minor) => {
    expect(parseAmount(value)).toBe(minor);
  });
});
