import type { AnthropicCostMeterConfig } from "./config.js";
import { getJson, HTTP_LIMITS, type HttpLimits, type ProviderMeterOptions } from "./http.js";
import { MeterError, type MeterAdapter, type MeterReading } from "./meter.js";
import { addDecimal, currencyCode, parseDecimal, readingAmount, ZERO, type Decimal } from "./money.js";
import { ceilDay, checkWindow, floorDay, overlaps, rfc3339 } from "./window.js";

/**
 * Anthropic's Admin API cost report for one workspace:
 *
 *   GET {api}/v1/organizations/cost_report?starting_at=…&ending_at=…&group_by[]=workspace_id&limit=31[&page=…]
 *   x-api-key: <Admin API key>, anthropic-version: 2023-06-01
 *
 * The report is in daily buckets (`bucket_width` 1d, the only width; `limit` at most 31 buckets
 * a page) of `results`, one per workspace when grouped by `workspace_id` (null for the default
 * workspace); each result's `amount` is a decimal string in the currency's lowest unit — "123.45"
 * USD is $1.23 — and `currency` is "USD". Pages follow `has_more` / `next_page` → `page`.
 *
 * The window is widened to whole UTC days (the provider snaps `starting_at` to the day; the end is
 * rounded up so today's bucket so far is asked for too), and a bucket counts when it overlaps the
 * window: a window starting mid-day counts that day's earlier usage — an over-count, never an
 * under-count. Only the configured workspace's results count: the organization's other
 * workspaces are the owner's other usage. The amounts are summed exactly and the total rounded up
 * to a whole cent (src/meters/money.ts).
 */
export const ANTHROPIC_VERSION = "2023-06-01";
const BUCKETS_PER_PAGE = 31;
const MAX_PAGE_TOKEN = 1024;

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

export function createAnthropicCostMeter(config: AnthropicCostMeterConfig, options: ProviderMeterOptions = {}): MeterAdapter {
  const limits: HttpLimits = { ...HTTP_LIMITS, ...options.limits };
  const label = `meter '${config.name}' (Anthropic cost report at ${new URL(config.api).host})`;
  const wanted = config.workspace === "default" ? null : config.workspace;

  async function read(window: { from: number; to: number }, signal: AbortSignal): Promise<MeterReading> {
    checkWindow(config.name, window);
    let total: Decimal = ZERO;
    let currency: string | undefined;
    let page: string | undefined;
    for (let pages = 0; ; pages++) {
      if (pages === limits.maxPages) throw new MeterError(`${label}: the report runs to more than ${limits.maxPages} pages; teamd reads at most that many`);
      const url = new URL(`${config.api}/v1/organizations/cost_report`);
      url.searchParams.set("starting_at", rfc3339(floorDay(window.from)));
      url.searchParams.set("ending_at", rfc3339(ceilDay(window.to)));
      url.searchParams.append("group_by[]", "workspace_id");
      url.searchParams.set("bucket_width", "1d");
      url.searchParams.set("limit", String(BUCKETS_PER_PAGE));
      if (page !== undefined) url.searchParams.set("page", page);
      const secret = config.key.reveal();
      const answer = await getJson({ label, url, headers: { "x-api-key": secret, "anthropic-version": ANTHROPIC_VERSION }, limits, signal, secret });
      if (!isMap(answer) || !Array.isArray(answer.data) || typeof answer.has_more !== "boolean")
        throw new MeterError(`${label}: the answer is not a cost report (no 'data' list or 'has_more')`);
      for (const bucket of answer.data) {
        if (!isMap(bucket) || !Array.isArray(bucket.results)) throw new MeterError(`${label}: a bucket of the report has no 'results' list`);
        const start = typeof bucket.starting_at === "string" ? Date.parse(bucket.starting_at) : NaN;
        const end = typeof bucket.ending_at === "string" ? Date.parse(bucket.ending_at) : NaN;
        if (!Number.isFinite(start) || !Number.isFinite(end) || end <= start)
          throw new MeterError(`${label}: a bucket of the report has no valid 'starting_at' and 'ending_at'`);
        if (!overlaps(start, end, window)) continue;
        for (const result of bucket.results) {
          if (!isMap(result)) throw new MeterError(`${label}: a result of the report is not an object`);
          const workspace = result.workspace_id ?? null;
          if (workspace !== null && typeof workspace !== "string") throw new MeterError(`${label}: a result's 'workspace_id' is not a string or null`);
          if (workspace !== wanted) continue;
          const amount = typeof result.amount === "string" ? parseDecimal(result.amount) : undefined;
          if (amount === undefined) throw new MeterError(`${label}: a result's 'amount' is not a decimal string`);
          const code = currencyCode(result.currency ?? "USD");
          if (code === undefined) throw new MeterError(`${label}: a result's 'currency' is not an ISO 4217 code`);
          if (currency !== undefined && code !== currency) throw new MeterError(`${label}: the report mixes currencies (${currency} and ${code})`);
          currency = code;
          total = addDecimal(total, amount);
        }
      }
      if (!answer.has_more) break;
      if (typeof answer.next_page !== "string" || answer.next_page === "" || answer.next_page.length > MAX_PAGE_TOKEN || answer.next_page === page)
        throw new MeterError(`${label}: the report says it has more but gives no new 'next_page'`);
      page = answer.next_page;
    }
    // `amount` is already in the lowest unit: no shift, the total rounded up to a whole one.
    return { amount: readingAmount(config.name, total, 0), currency: currency ?? "USD", from: window.from, to: window.to };
  }

  return { name: config.name, read };
}
