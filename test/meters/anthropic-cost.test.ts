import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ANTHROPIC_VERSION, createAnthropicCostMeter } from "../../src/meters/index.js";
import { startFakeProvider, type AnthropicCostItem, type FakeProvider } from "../support/fake-provider.js";
import { anthropicConfig, at, CANARY, meterError, signal } from "./helpers.js";

const ITEMS: AnthropicCostItem[] = [
  { day: "2026-11-01", workspace: "wrkspc_01TEAM", amount: "1000.25" },
  { day: "2026-11-01", workspace: "wrkspc_01OTHER", amount: "50000" },
  { day: "2026-11-01", workspace: null, amount: "700" },
  { day: "2026-11-02", workspace: "wrkspc_01TEAM", amount: "2000.5" },
  { day: "2026-11-02", workspace: "wrkspc_01TEAM", amount: "0.125" },
  { day: "2026-11-02", workspace: "wrkspc_01OTHER", amount: "99999.9" },
  { day: "2026-11-03", workspace: "wrkspc_01TEAM", amount: "300" },
  { day: "2026-11-04", workspace: "wrkspc_01OTHER", amount: "1" },
  { day: "2026-11-05", workspace: "wrkspc_01TEAM", amount: "0.001" },
];
const WINDOW = { from: at("2026-11-01T00:00:00"), to: at("2026-11-06T00:00:00") };

describe("the anthropic-cost meter: Anthropic's Admin API cost report, one workspace, against a fake provider on loopback", () => {
  let provider: FakeProvider;
  beforeAll(async () => {
    provider = await startFakeProvider({ key: CANARY, anthropic: ITEMS });
  });
  afterAll(() => provider.close());
  beforeEach(() => {
    provider.seen.length = 0;
    Object.assign(provider.knobs, { bucketsPerPage: 31, failStatus: undefined, delayMs: 0, body: undefined, redirect: undefined });
  });

  it("sums a multi-page window for the configured workspace only, exactly, rounding the total up to a whole cent", async () => {
    provider.knobs.bucketsPerPage = 2;
    const reading = await createAnthropicCostMeter(anthropicConfig(provider.url)).read(WINDOW, signal());
    // 1000.25 + 2000.5 + 0.125 + 300 + 0.001 = 3300.876 cents → 3301; the other workspace's 150,000.9 and the default's 700 are not counted.
    expect(reading).toEqual({ amount: 3301, currency: "USD", from: WINDOW.from, to: WINDOW.to });
    expect(provider.seen).toHaveLength(3);
    for (const [i, request] of provider.seen.entries()) {
      expect(request.path).toBe("/v1/organizations/cost_report");
      expect(request.authorized).toBe(true);
      expect(request.headers["x-api-key"]).toBe(CANARY);
      expect(request.headers["anthropic-version"]).toBe(ANTHROPIC_VERSION);
      expect(request.url).not.toContain(CANARY);
      expect(request.query.get("starting_at")).toBe("2026-11-01T00:00:00Z");
      expect(request.query.get("ending_at")).toBe("2026-11-06T00:00:00Z");
      expect(request.query.getAll("group_by[]")).toEqual(["workspace_id"]);
      expect(request.query.get("page") !== null).toBe(i > 0);
    }
  });

  it("widens a mid-day window to the UTC days it touches and counts only the buckets that overlap it", async () => {
    const window = { from: at("2026-11-02T12:00:00"), to: at("2026-11-04T06:00:00") };
    const reading = await createAnthropicCostMeter(anthropicConfig(provider.url)).read(window, signal());
    expect(reading.amount).toBe(2301); // 2000.5 + 0.125 + 300 = 2300.625 → 2301 (days 2–4; nothing of the team's on day 4)
    expect(reading.from).toBe(window.from);
    expect(provider.seen[0]?.query.get("starting_at")).toBe("2026-11-02T00:00:00Z");
    expect(provider.seen[0]?.query.get("ending_at")).toBe("2026-11-05T00:00:00Z");
  });

  it('reads the organization\'s default workspace (workspace_id null) when configured as "default"', async () => {
    const reading = await createAnthropicCostMeter(anthropicConfig(provider.url, { workspace: "default" })).read(WINDOW, signal());
    expect(reading.amount).toBe(700);
  });

  it("a wrong key is a 401 MeterError naming the fix; the provider's answer, which quotes the key, is not repeated", async () => {
    const other = await startFakeProvider({ key: "sk-admin-the-right-one-000000", anthropic: ITEMS });
    try {
      const error = await meterError(createAnthropicCostMeter(anthropicConfig(other.url)).read(WINDOW, signal()));
      expect(error.message).toMatch(/answered 401 \(authentication_error\).*admin key/);
      expect(other.seen[0]?.authorized).toBe(false);
    } finally {
      await other.close();
    }
  });

  it("a 500, a non-JSON body and an answer of the wrong shape are MeterErrors that quote nothing of the answer", async () => {
    const meter = createAnthropicCostMeter(anthropicConfig(provider.url));
    provider.knobs.failStatus = 500;
    expect((await meterError(meter.read(WINDOW, signal()))).message).toMatch(/answered 500/);
    provider.knobs.failStatus = undefined;
    provider.knobs.body = `<html>upstream error for ${CANARY}</html>`;
    expect((await meterError(meter.read(WINDOW, signal()))).message).toMatch(/not JSON/);
    provider.knobs.body = JSON.stringify({ data: "nothing", echo: CANARY });
    expect((await meterError(meter.read(WINDOW, signal()))).message).toMatch(/not a cost report/);
    provider.knobs.body = JSON.stringify({
      data: [{ starting_at: "2026-11-01T00:00:00Z", ending_at: "2026-11-02T00:00:00Z", results: [{ workspace_id: "wrkspc_01TEAM", amount: CANARY }] }],
      has_more: false,
    });
    expect((await meterError(meter.read(WINDOW, signal()))).message).toMatch(/'amount' is not a decimal string/);
  });

  it("a slow answer is cut at the deadline, a redirect is not followed, and a body past the bound is refused", async () => {
    provider.knobs.delayMs = 5_000;
    const started = Date.now();
    const slow = await meterError(createAnthropicCostMeter(anthropicConfig(provider.url), { limits: { timeoutMs: 300 } }).read(WINDOW, signal()));
    expect(slow.message).toMatch(/no complete answer within 1 s/);
    expect(Date.now() - started).toBeLessThan(3_000);
    provider.knobs.delayMs = 0;

    const elsewhere = await startFakeProvider({ key: CANARY, anthropic: ITEMS });
    try {
      provider.knobs.redirect = `${elsewhere.url.replace("127.0.0.1", "localhost")}/v1/organizations/cost_report`;
      expect((await meterError(createAnthropicCostMeter(anthropicConfig(provider.url)).read(WINDOW, signal()))).message).toMatch(/redirect \(302\)/);
      expect(elsewhere.seen).toHaveLength(0);
    } finally {
      await elsewhere.close();
    }
    provider.knobs.redirect = undefined;

    const big = await meterError(createAnthropicCostMeter(anthropicConfig(provider.url), { limits: { maxBytes: 256 } }).read(WINDOW, signal()));
    expect(big.message).toMatch(/larger than 256 bytes/);
  });

  it("follows at most maxPages pages, and stops when the caller cancels", async () => {
    provider.knobs.bucketsPerPage = 1;
    const error = await meterError(createAnthropicCostMeter(anthropicConfig(provider.url), { limits: { maxPages: 3 } }).read(WINDOW, signal()));
    expect(error.message).toMatch(/more than 3 pages/);
    expect(provider.seen).toHaveLength(3);

    provider.knobs.delayMs = 5_000;
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    expect((await meterError(createAnthropicCostMeter(anthropicConfig(provider.url)).read(WINDOW, controller.signal))).message).toMatch(/cancelled/);
  });

  it("refuses a report that mixes currencies or totals below zero, and a window that is not one", async () => {
    const meter = createAnthropicCostMeter(anthropicConfig(provider.url));
    const bucket = (results: unknown[]) =>
      JSON.stringify({ data: [{ starting_at: "2026-11-01T00:00:00Z", ending_at: "2026-11-02T00:00:00Z", results }], has_more: false });
    provider.knobs.body = bucket([
      { workspace_id: "wrkspc_01TEAM", amount: "1", currency: "USD" },
      { workspace_id: "wrkspc_01TEAM", amount: "1", currency: "EUR" },
    ]);
    expect((await meterError(meter.read(WINDOW, signal()))).message).toMatch(/mixes currencies \(USD and EUR\)/);
    provider.knobs.body = bucket([{ workspace_id: "wrkspc_01TEAM", amount: "-5.5", currency: "USD" }]);
    expect((await meterError(meter.read(WINDOW, signal()))).message).toMatch(/negative/);
    await meterError(meter.read({ from: WINDOW.to, to: WINDOW.from }, signal()));
    await meterError(meter.read({ from: 1.5, to: 10 }, signal()));
  });
});
