import { describe, expect, it } from "vitest";
import { parseRefusalBudget } from "../../../daemon/server/serve.js";

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
