import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createOpenaiCostsMeter } from "../../src/meters/index.js";
import { startFakeProvider, type FakeProvider, type OpenaiCostItem } from "../support/fake-provider.js";
import { at, CANARY, meterError, openaiConfig, signal } from "./helpers.js";

const ITEMS: OpenaiCostItem[] = [
  { day: "2026-11-01", project: "proj_team", value: 0.1 },
  { day: "2026-11-01", project: "proj_other", value: 400 },
  { day: "2026-11-02", project: "proj_team", value: 0.2 },
  { day: "2026-11-02", project: null, value: 12.5 },
  { day: "2026-11-03", project: "proj_team", value: 1.005 },
  { day: "2026-11-04", project: "proj_other", value: 3 },
  { day: "2026-11-05", project: "proj_team", value: 19.99 },
];
const WINDOW = { from: at("2026-11-01T00:00:00"), to: at("2026-11-06T00:00:00") };

describe("the openai-costs meter: OpenAI's organization Costs API, one project, against a fake provider on loopback", () => {
  let provider: FakeProvider;
  beforeAll(async () => {
    provider = await startFakeProvider({ key: CANARY, openai: ITEMS });
  });
  afterAll(() => provider.close());
  beforeEach(() => {
    provider.seen.length = 0;
    Object.assign(provider.knobs, { bucketsPerPage: 31, failStatus: undefined, delayMs: 0, body: undefined, redirect: undefined, ignoreProjectFilter: false });
  });

  it("sums a multi-page window for the configured project only, in exact cents (no float sum), with the bearer key", async () => {
    provider.knobs.bucketsPerPage = 2;
    const reading = await createOpenaiCostsMeter(openaiConfig(provider.url)).read(WINDOW, signal());
    // $0.1 + $0.2 + $1.005 + $19.99 = $21.295 → 2129.5 cents → 2130. A float sum would give
    // 21.295000000000002 and the same cents here, but 0.1 + 0.2 alone is 0.30000000000000004 (next test).
    expect(reading).toEqual({ amount: 2130, currency: "USD", from: WINDOW.from, to: WINDOW.to });
    expect(provider.seen).toHaveLength(3);
    for (const [i, request] of provider.seen.entries()) {
      expect(request.path).toBe("/v1/organization/costs");
      expect(request.headers.authorization).toBe(`Bearer ${CANARY}`);
      expect(request.headers["x-api-key"]).toBeUndefined();
      expect(request.url).not.toContain(CANARY);
      expect(request.query.get("start_time")).toBe(String(WINDOW.from / 1000));
      expect(request.query.get("end_time")).toBe(String(WINDOW.to / 1000));
      expect(request.query.getAll("project_ids")).toEqual(["proj_team"]);
      expect(request.query.getAll("group_by")).toEqual(["project_id"]);
      expect(request.query.get("page") !== null).toBe(i > 0);
    }
  });

  it("0.1 + 0.2 dollars is 30 cents, not 31: the values are summed as the decimals the provider wrote", async () => {
    const reading = await createOpenaiCostsMeter(openaiConfig(provider.url)).read({ from: WINDOW.from, to: at("2026-11-03T00:00:00") }, signal());
    expect(reading.amount).toBe(30);
  });

  it("counts only the configured project even when the provider ignores the project filter", async () => {
    provider.knobs.ignoreProjectFilter = true;
    const reading = await createOpenaiCostsMeter(openaiConfig(provider.url)).read(WINDOW, signal());
    expect(reading.amount).toBe(2130);
    const other = await createOpenaiCostsMeter(openaiConfig(provider.url, { project: "proj_other", name: "oai-other" })).read(WINDOW, signal());
    expect(other.amount).toBe(40_300);
  });

  it("a wrong key is a 401 MeterError; a 500, a slow answer, garbage and the wrong shape are MeterErrors; the canary is in none", async () => {
    const wrong = await startFakeProvider({ key: "sk-admin-the-right-one-000000", openai: ITEMS });
    try {
      const error = await meterError(createOpenaiCostsMeter(openaiConfig(wrong.url)).read(WINDOW, signal()));
      expect(error.message).toMatch(/answered 401 \(invalid_request_error\)/);
    } finally {
      await wrong.close();
    }
    const meter = createOpenaiCostsMeter(openaiConfig(provider.url), { limits: { timeoutMs: 300 } });
    provider.knobs.failStatus = 500;
    expect((await meterError(meter.read(WINDOW, signal()))).message).toMatch(/answered 500/);
    provider.knobs.failStatus = undefined;
    provider.knobs.delayMs = 5_000;
    expect((await meterError(meter.read(WINDOW, signal()))).message).toMatch(/no complete answer within/);
    provider.knobs.delayMs = 0;
    provider.knobs.body = `{"data": [${CANARY}`;
    expect((await meterError(meter.read(WINDOW, signal()))).message).toMatch(/not JSON/);
    provider.knobs.body = JSON.stringify({ object: "page", data: [{ start_time: 1, end_time: 2 }], has_more: false });
    expect((await meterError(meter.read(WINDOW, signal()))).message).toMatch(/no 'results' list/);
    provider.knobs.body = JSON.stringify({
      object: "page",
      data: [
        {
          start_time: WINDOW.from / 1000,
          end_time: WINDOW.from / 1000 + 86_400,
          results: [{ project_id: "proj_team", amount: { value: CANARY, currency: "usd" } }],
        },
      ],
      has_more: false,
    });
    expect((await meterError(meter.read(WINDOW, signal()))).message).toMatch(/'amount.value' is not a number/);
  });

  it("a page that says it has more but gives no next page, and a report past maxPages, are refused", async () => {
    provider.knobs.body = JSON.stringify({ object: "page", data: [], has_more: true, next_page: null });
    expect((await meterError(createOpenaiCostsMeter(openaiConfig(provider.url)).read(WINDOW, signal()))).message).toMatch(/no new 'next_page'/);
    provider.knobs.body = undefined;
    provider.knobs.bucketsPerPage = 1;
    expect((await meterError(createOpenaiCostsMeter(openaiConfig(provider.url), { limits: { maxPages: 4 } }).read(WINDOW, signal()))).message).toMatch(
      /more than 4 pages/,
    );
  });
});
