import type { OpenaiCostsMeterConfig } from "./config.js";
import { getJson, HTTP_LIMITS, type HttpLimits, type ProviderMeterOptions } from "./http.js";
import { MeterError, type MeterAdapter, type MeterReading } from "./meter.js";
import { addDecimal, currencyCode, decimalOfNumber, minorDigits, parseDecimal, readingAmount, ZERO, type Decimal } from "./money.js";
import { ceilDay, checkWindow, floorDay, overlaps } from "./window.js";

/**
 * OpenAI's organization Costs API for one project:
 *
 *   GET {api}/v1/organization/costs?start_time=UNIX&end_time=UNIX&project_ids=proj_…&group_by=project_id&bucket_width=1d&limit=180[&page=…]
 *   Authorization: Bearer <Admin API key>
 *
 * The answer is daily buckets (`start_time` inclusive, `end_time` exclusive, Unix seconds; 1d
 * the only width; `limit` at most 180) of `results`, each with `amount: { value, currency }` —
 * `value` a JSON number in the currency's major unit (dollars), `currency` lower-case ISO 4217
 * ("usd") — and, grouped by `project_id`, the project. Pages follow `has_more` / `next_page` →
 * `page`.
 *
 * The window is widened to whole UTC days and a bucket counts when it overlaps it (as for
 * Anthropic: an over-count at a mid-day start, never an under-count). The project is filtered
 * twice: by `project_ids` at the provider and by each result's `project_id` here, so a provider
 * that ignored the filter still counts none of the organization's other projects. A `value` is
 * taken exactly as the provider wrote it (its shortest round-trip decimal text, src/meters/money.ts:
 * no float sum), the total converted to minor units and rounded up to a whole cent.
 */
const BUCKETS_PER_PAGE = 180;
const MAX_PAGE_TOKEN = 1024;

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

export function createOpenaiCostsMeter(config: OpenaiCostsMeterConfig, options: ProviderMeterOptions = {}): MeterAdapter {
  const limits: HttpLimits = { ...HTTP_LIMITS, ...options.limits };
  const label = `meter '${config.name}' (OpenAI costs at ${new URL(config.api).host})`;

  async function read(window: { from: number; to: number }, signal: AbortSignal): Promise<MeterReading> {
    checkWindow(config.name, window);
    let total: Decimal = ZERO;
    let currency: string | undefined;
    let page: string | undefined;
    for (let pages = 0; ; pages++) {
      if (pages === limits.maxPages) throw new MeterError(`${label}: the report runs to more than ${limits.maxPages} pages; teamd reads at most that many`);
      const url = new URL(`${config.api}/v1/organization/costs`);
      url.searchParams.set("start_time", String(floorDay(window.from) / 1000));
      url.searchParams.set("end_time", String(ceilDay(window.to) / 1000));
      url.searchParams.set("project_ids", config.project);
      url.searchParams.set("group_by", "project_id");
      url.searchParams.set("bucket_width", "1d");
      url.searchParams.set("limit", String(BUCKETS_PER_PAGE));
      if (page !== undefined) url.searchParams.set("page", page);
      const secret = config.key.reveal();
      const answer = await getJson({ label, url, headers: { authorization: `Bearer ${secret}` }, limits, signal, secret });
      if (!isMap(answer) || !Array.isArray(answer.data) || typeof answer.has_more !== "boolean")
        throw new MeterError(`${label}: the answer is not a costs page (no 'data' list or 'has_more')`);
      for (const bucket of answer.data) {
        // The reference names the list `results`; one rendering of it says `result`.
        const results = isMap(bucket) ? (bucket.results ?? bucket.result) : undefined;
        if (!isMap(bucket) || !Array.isArray(results)) throw new MeterError(`${label}: a bucket of the answer has no 'results' list`);
        const { start_time: start, end_time: end } = bucket;
        if (typeof start !== "number" || typeof end !== "number" || !Number.isFinite(start) || !Number.isFinite(end) || end <= start)
          throw new MeterError(`${label}: a bucket of the answer has no valid 'start_time' and 'end_time'`);
        if (!overlaps(start * 1000, end * 1000, window)) continue;
        for (const result of results) {
          if (!isMap(result)) throw new MeterError(`${label}: a result of the answer is not an object`);
          if (result.project_id !== config.project) continue;
          const money = result.amount;
          if (!isMap(money)) throw new MeterError(`${label}: a result has no 'amount' object`);
          const value =
            typeof money.value === "number" ? decimalOfNumber(money.value) : typeof money.value === "string" ? parseDecimal(money.value) : undefined;
          if (value === undefined) throw new MeterError(`${label}: a result's 'amount.value' is not a number`);
          const code = currencyCode(money.currency);
          if (code === undefined) throw new MeterError(`${label}: a result's 'amount.currency' is not an ISO 4217 code`);
          if (currency !== undefined && code !== currency) throw new MeterError(`${label}: the answer mixes currencies (${currency} and ${code})`);
          currency = code;
          total = addDecimal(total, value);
        }
      }
      if (!answer.has_more) break;
      if (typeof answer.next_page !== "string" || answer.next_page === "" || answer.next_page.length > MAX_PAGE_TOKEN || answer.next_page === page)
        throw new MeterError(`${label}: the answer says it has more but gives no new 'next_page'`);
      page = answer.next_page;
    }
    const code = currency ?? "USD";
    // Major units (dollars) to minor (cents): shifted by the currency's minor digits, rounded up.
    return { amount: readingAmount(config.name, total, minorDigits(code)), currency: code, from: window.from, to: window.to };
  }

  return { name: config.name, read };
}
