import { describe, expect, it } from "vitest";
import { parseActBudget, parseRefusalBudget, parseStartSettle } from "../../../daemon/server/serve.js";

/** TEAMD_REFUSAL_BUDGET (issue 20, finding 4): the owner's setting, read once at start; anything but BURST/PER_MINUTE stops the start. */
describe("parseRefusalBudget", () => {
  it.each([
    ["unset", undefined, undefined],
    ["empty", "", undefined],
    ["the default's own numbers", "300/60", { burst: 300, perMinute: 60 }],
    ["no refill", "20/0", { burst: 20, perMinute: 0 }],
  ])("%s", (_what, value, expected) => {
    expect(parseRefusalBudget(value)).toEqual(expected);
  });
  it.each([["0/60"], ["300"], ["300/"], ["-1/60"], ["1.5/60"], ["300/60/1"], [" 300/60"], ["1234567890/1"]])("refuses %s", (value) => {
    expect(() => parseRefusalBudget(value)).toThrow(/BURST\/PER_MINUTE/);
  });
});

/** TEAMD_ACT_BUDGET: the same shape, in MiB of ledger records. */
describe("parseActBudget", () => {
  it.each([
    ["unset", undefined, undefined],
    ["the default's own numbers", "16/2", { burst: 16 * 2 ** 20, perMinute: 2 * 2 ** 20 }],
    ["no refill", "1/0", { burst: 2 ** 20, perMinute: 0 }],
  ])("%s", (_what, value, expected) => {
    expect(parseActBudget(value)).toEqual(expected);
  });
  it.each([["0/2"], ["16"], ["16MiB/2MiB"], ["16/2.5"]])("refuses %s, naming the variable", (value) => {
    expect(() => parseActBudget(value)).toThrow(/TEAMD_ACT_BUDGET is .*BURST\/PER_MINUTE, e\.g\. 16\/2/);
  });
});

/** TEAMD_START_SETTLE_MS: how long `teamd start` watches a seat's command; a whole number of ms, 0 to 60000. */
describe("parseStartSettle", () => {
  it.each([
    ["unset", undefined, undefined],
    ["empty", "", undefined],
    ["none", "0", 0],
    ["the default's own number", "2000", 2000],
    ["the most", "60000", 60_000],
  ])("%s", (_what, value, expected) => {
    expect(parseStartSettle(value)).toEqual(expected);
  });
  it.each([["60001"], ["-1"], ["2s"], ["1.5"], [" 500"], ["1e3"], ["123456"]])("refuses %s, naming the variable", (value) => {
    expect(() => parseStartSettle(value)).toThrow(/TEAMD_START_SETTLE_MS is .*whole number of milliseconds from 0 to 60000/);
  });
});
