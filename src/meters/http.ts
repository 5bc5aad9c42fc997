import { MeterError } from "./meter.js";

/**
 * One GET of a provider's report API, bounded: a deadline per request (the whole answer, body
 * included), a size bound on the body, no redirect followed (an admin key goes only to the
 * configured base URL, never to where an answer points), and an error that never quotes a
 * header, a URL's query or the provider's answer — a provider's error may repeat the request, key
 * and all. From an error body it keeps at most the provider's error type, when that is a plain
 * word (`authentication_error`), which tells the owner what to fix.
 */
export interface HttpLimits {
  /** Per request, body included (default 10 s). */
  readonly timeoutMs: number;
  /** The largest answer read (default 4 MiB). */
  readonly maxBytes: number;
  /** The most pages one read follows (default 50). */
  readonly maxPages: number;
}

/** What a provider meter's owner (the daemon, or a test) may tighten. */
export interface ProviderMeterOptions {
  readonly limits?: Partial<HttpLimits>;
}

export const HTTP_LIMITS: HttpLimits = Object.freeze({ timeoutMs: 10_000, maxBytes: 4 * 1024 * 1024, maxPages: 50 });

export interface GetJson {
  /** Names the meter and the provider in every error: `meter 'oai' (OpenAI costs at api.openai.com)`. */
  readonly label: string;
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
  readonly limits: HttpLimits;
  readonly signal: AbortSignal;
  /** The key sent: dropped from anything kept of an answer, whatever the provider does. */
  readonly secret: string;
}

const seconds = (ms: number): string => `${Math.max(1, Math.round(ms / 1000))} s`;

export async function getJson(request: GetJson): Promise<unknown> {
  const { label, limits, signal } = request;
  if (signal.aborted) throw new MeterError(`${label}: the read was cancelled`);
  const deadline = AbortSignal.timeout(limits.timeoutMs);
  const both = AbortSignal.any([signal, deadline]);
  const failed = (what: string): MeterError =>
    new MeterError(
      signal.aborted
        ? `${label}: the read was cancelled`
        : deadline.aborted
          ? `${label}: no complete answer within ${seconds(limits.timeoutMs)}`
          : `${label}: ${what}`,
    );
  let response: Response;
  try {
    response = await fetch(request.url, { method: "GET", redirect: "manual", headers: { accept: "application/json", ...request.headers }, signal: both });
  } catch {
    // The cause may carry the URL or a header: it is not repeated.
    throw failed(`the API could not be reached`);
  }
  if (response.status === 0 || (response.status >= 300 && response.status < 400)) {
    await response.body?.cancel().catch(() => undefined);
    throw new MeterError(
      `${label}: the API answered a redirect (${response.status}); teamd follows none with an admin key — set 'api' to the address that answers`,
    );
  }
  const body = await readBounded(response, limits.maxBytes, failed, label);
  if (!response.ok) {
    const type = errorType(body, request.secret);
    const hint =
      response.status === 401 || response.status === 403
        ? ": the owner checks the meter's admin key (an Admin API key, with access to the organization's cost reports)"
        : response.status === 429
          ? ": rate limited; a longer 'every' asks less often"
          : "";
    throw new MeterError(`${label}: the API answered ${response.status}${type !== undefined ? ` (${type})` : ""}${hint}`);
  }
  try {
    return JSON.parse(body) as unknown;
  } catch {
    throw new MeterError(`${label}: the answer is not JSON`);
  }
}

async function readBounded(response: Response, maxBytes: number, failed: (what: string) => MeterError, label: string): Promise<string> {
  const tooLarge = () => new MeterError(`${label}: the answer is larger than ${maxBytes} bytes`);
  const declared = Number(response.headers.get("content-length") ?? "0");
  if (declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw tooLarge();
  }
  if (response.body === null) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel().catch(() => undefined);
        throw tooLarge();
      }
      chunks.push(value);
    }
  } catch (error) {
    if (error instanceof MeterError) throw error;
    throw failed("the answer was cut off");
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** The provider's error type (`{"error": {"type": "authentication_error"}}`), when it is a plain word and not the key. */
function errorType(body: string, secret: string): string | undefined {
  let data: unknown;
  try {
    data = JSON.parse(body);
  } catch {
    return undefined;
  }
  const error = typeof data === "object" && data !== null ? (data as { error?: unknown }).error : undefined;
  const type = typeof error === "object" && error !== null ? (error as { type?: unknown }).type : undefined;
  if (typeof type !== "string" || !/^[a-z][a-z_]{0,47}$/.test(type) || type.includes(secret) || secret.includes(type)) return undefined;
  return type;
}
