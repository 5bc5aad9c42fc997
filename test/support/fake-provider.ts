import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A fake provider cost API on 127.0.0.1 for the meters' tests: a real node:http server on port 0
 * serving both report shapes teamd reads —
 *
 *   GET /v1/organizations/cost_report   Anthropic's Admin API cost report (x-api-key, anthropic-version)
 *   GET /v1/organization/costs          OpenAI's organization Costs API (Authorization: Bearer)
 *
 * — from the cost items a test gives it, in daily buckets, paginated (`has_more` / `next_page` →
 * `page`). It answers only a request carrying its key; a wrong key gets a 401 whose body quotes
 * the key it was sent, as a careless provider might, so a test can prove no meter error repeats
 * it. Knobs make it fail on purpose: a status for every answer, a delay, a raw body, a redirect,
 * fewer buckets a page, a project filter it ignores. It records every request it saw.
 */
export interface AnthropicCostItem {
  /** The UTC day, `2026-11-01`. */
  readonly day: string;
  /** null: the organization's default workspace. */
  readonly workspace: string | null;
  /** In cents, a decimal string (the report's own form). */
  readonly amount: string;
  readonly currency?: string;
}

export interface OpenaiCostItem {
  readonly day: string;
  readonly project: string | null;
  /** In dollars, a JSON number (the API's own form). */
  readonly value: number;
  readonly currency?: string;
}

export interface FakeProviderKnobs {
  /** The most buckets a page holds (the provider's `limit` permitting). */
  bucketsPerPage: number;
  /** Answer every request with this status (and an error body quoting the key it was sent). */
  failStatus: number | undefined;
  /** Wait this long before answering. */
  delayMs: number;
  /** Answer 200 with this raw body instead of the report. */
  body: string | undefined;
  /** Answer 302 to this location. */
  redirect: string | undefined;
  /** Ignore OpenAI's `project_ids` filter (the meter must filter by `project_id` itself). */
  ignoreProjectFilter: boolean;
}

export interface SeenRequest {
  readonly method: string;
  readonly path: string;
  /** The request target as sent, query included. */
  readonly url: string;
  readonly query: URLSearchParams;
  readonly headers: IncomingHttpHeaders;
  /** Whether it carried the provider's key in the provider's header. */
  readonly authorized: boolean;
}

export interface FakeProvider {
  /** The base URL a meter's `api` points at: `http://127.0.0.1:PORT`. */
  readonly url: string;
  readonly anthropic: AnthropicCostItem[];
  readonly openai: OpenaiCostItem[];
  readonly knobs: FakeProviderKnobs;
  readonly seen: SeenRequest[];
  close(): Promise<void>;
}

const DAY_MS = 86_400_000;
const dayMs = (day: string): number => Date.parse(`${day}T00:00:00Z`);
const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.000Z$/, "Z");
const encodePage = (index: number): string => `page_${Buffer.from(String(index)).toString("base64url")}`;
const decodePage = (page: string | null): number | undefined => {
  if (page === null) return 0;
  const m = /^page_([A-Za-z0-9_-]+)$/.exec(page);
  const n = m === null ? NaN : Number(Buffer.from(m[1] as string, "base64url").toString());
  return Number.isInteger(n) && n >= 0 ? n : undefined;
};

/** The days [start, end) a report covers, with those of the items' days that fall in it. */
function days(start: number, end: number): number[] {
  const out: number[] = [];
  for (let d = start - (start % DAY_MS); d + DAY_MS <= end; d += DAY_MS) out.push(d);
  return out;
}

export async function startFakeProvider(options: { key: string; anthropic?: AnthropicCostItem[]; openai?: OpenaiCostItem[] }): Promise<FakeProvider> {
  const { key } = options;
  const anthropic = [...(options.anthropic ?? [])];
  const openai = [...(options.openai ?? [])];
  const knobs: FakeProviderKnobs = { bucketsPerPage: 31, failStatus: undefined, delayMs: 0, body: undefined, redirect: undefined, ignoreProjectFilter: false };
  const seen: SeenRequest[] = [];

  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    const text = typeof body === "string" ? body : JSON.stringify(body);
    res.writeHead(status, {
      "content-type": typeof body === "string" ? "text/html" : "application/json",
      "content-length": Buffer.byteLength(text),
      ...headers,
    });
    res.end(text);
  };

  /** Each kind's 401, quoting the key it was sent (what a meter must never repeat). */
  const unauthorized = (res: ServerResponse, anthropicShape: boolean, sent: string) =>
    send(
      res,
      401,
      anthropicShape
        ? { type: "error", error: { type: "authentication_error", message: `invalid x-api-key: ${sent}` } }
        : { error: { message: `Incorrect API key provided: ${sent}`, type: "invalid_request_error", code: "invalid_api_key" } },
    );

  function costReport(query: URLSearchParams, res: ServerResponse): void {
    const start = Date.parse(query.get("starting_at") ?? "");
    const endText = query.get("ending_at");
    const end = endText === null ? Math.max(...anthropic.map((i) => dayMs(i.day) + DAY_MS), start + DAY_MS) : Date.parse(endText);
    const limit = Number(query.get("limit") ?? "7");
    const page = decodePage(query.get("page"));
    if (!Number.isFinite(start) || !Number.isFinite(end) || !(limit >= 1 && limit <= 31) || page === undefined)
      return send(res, 400, { type: "error", error: { type: "invalid_request_error", message: "bad query" } });
    const byWorkspace = query.getAll("group_by[]").includes("workspace_id");
    const all = days(start, end);
    const size = Math.min(limit, knobs.bucketsPerPage);
    const slice = all.slice(page, page + size);
    send(res, 200, {
      data: slice.map((d) => ({
        starting_at: iso(d),
        ending_at: iso(d + DAY_MS),
        results: anthropic
          .filter((i) => dayMs(i.day) === d)
          .map((i) => ({
            currency: i.currency ?? "USD",
            amount: i.amount,
            workspace_id: byWorkspace ? i.workspace : null,
            description: null,
            cost_type: null,
            context_window: null,
            model: null,
            service_tier: null,
            token_type: null,
          })),
      })),
      has_more: page + size < all.length,
      next_page: page + size < all.length ? encodePage(page + size) : null,
    });
  }

  function costs(query: URLSearchParams, res: ServerResponse): void {
    const start = Number(query.get("start_time"));
    const endText = query.get("end_time");
    const end = endText === null ? Math.max(...openai.map((i) => dayMs(i.day) / 1000 + 86_400), start + 86_400) : Number(endText);
    const limit = Number(query.get("limit") ?? "7");
    const page = decodePage(query.get("page"));
    if (!Number.isInteger(start) || !Number.isInteger(end) || !(limit >= 1 && limit <= 180) || page === undefined)
      return send(res, 400, { error: { message: "bad query", type: "invalid_request_error" } });
    const projects = query.getAll("project_ids");
    const byProject = query.getAll("group_by").includes("project_id");
    const all = days(start * 1000, end * 1000);
    const size = Math.min(limit, knobs.bucketsPerPage);
    const slice = all.slice(page, page + size);
    send(res, 200, {
      object: "page",
      data: slice.map((d) => ({
        object: "bucket",
        start_time: d / 1000,
        end_time: (d + DAY_MS) / 1000,
        results: openai
          .filter((i) => dayMs(i.day) === d)
          .filter((i) => knobs.ignoreProjectFilter || projects.length === 0 || (i.project !== null && projects.includes(i.project)))
          .map((i) => ({
            object: "organization.costs.result",
            amount: { value: i.value, currency: i.currency ?? "usd" },
            line_item: null,
            project_id: byProject ? i.project : null,
          })),
      })),
      has_more: page + size < all.length,
      next_page: page + size < all.length ? encodePage(page + size) : null,
    });
  }

  function answer(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const isAnthropic = url.pathname === "/v1/organizations/cost_report";
    const isOpenai = url.pathname === "/v1/organization/costs";
    const sentKey = isAnthropic ? String(req.headers["x-api-key"] ?? "") : String(req.headers.authorization ?? "").replace(/^Bearer /, "");
    const authorized = isAnthropic
      ? sentKey === key && typeof req.headers["anthropic-version"] === "string"
      : isOpenai
        ? req.headers.authorization === `Bearer ${key}`
        : false;
    seen.push({ method: req.method ?? "", path: url.pathname, url: req.url ?? "", query: url.searchParams, headers: req.headers, authorized });
    if (knobs.redirect !== undefined) return send(res, 302, "", { location: knobs.redirect });
    if (knobs.failStatus !== undefined)
      return send(res, knobs.failStatus, { type: "error", error: { type: "api_error", message: `internal error serving key ${sentKey}` } });
    if (!isAnthropic && !isOpenai) return send(res, 404, { error: { type: "not_found_error", message: "no such path" } });
    if (req.method !== "GET") return send(res, 405, { error: { type: "invalid_request_error", message: "GET only" } });
    if (!authorized) return unauthorized(res, isAnthropic, sentKey);
    if (knobs.body !== undefined) return send(res, 200, knobs.body);
    if (isAnthropic) costReport(url.searchParams, res);
    else costs(url.searchParams, res);
  }

  const server: Server = createServer((req, res) => {
    req.resume();
    if (knobs.delayMs <= 0) return answer(req, res);
    const timer = setTimeout(() => answer(req, res), knobs.delayMs);
    res.once("close", () => clearTimeout(timer));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    anthropic,
    openai,
    knobs,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
