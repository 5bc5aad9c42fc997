import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * The HTTP part every stand-in lab API shares (mock-messages-api.ts, mock-responses-api.ts,
 * mock-gemini-api.ts): a loopback server that reads each request's body (bounded), hands it to
 * the protocol's answer, and answers 500 when that throws. The stand-ins hold no key and check
 * none: they record what came, for the test to assert on.
 */
export interface MockRequest {
  readonly method: string;
  /** The path without its query. */
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/**
 * What a stand-in plays: the agent's main conversation (a request offering its tools) gets step
 * N, where N is how many tool results the conversation carries so far — so each answer follows
 * the agent's own progress, and an agent that skipped or failed a step is seen doing so.
 */
export type ScriptStep = { readonly tool: string; readonly input: Record<string, unknown> } | { readonly text: string };

/** A request as a stand-in recorded it. */
export interface SeenRequest {
  readonly path: string;
  readonly method: string;
  /** The API key or bearer token the client sent. */
  readonly key?: string;
  /** Whether this was the agent's main conversation (it offered the tools the script calls). */
  readonly main: boolean;
  readonly step?: number;
  /** The text of each tool result the conversation's last message carries. */
  readonly toolResults: readonly string[];
}

export interface MockLabApi {
  readonly port: number;
  readonly seen: readonly SeenRequest[];
  close(): Promise<void>;
}

/** The step of the script a main conversation with `results` tool results so far gets. */
export function scriptStep(script: readonly ScriptStep[], results: number): { step: number; play: ScriptStep } {
  const step = Math.min(results, script.length - 1);
  return { step, play: script[step] as ScriptStep };
}

export interface MockApiServer {
  readonly port: number;
  close(): Promise<void>;
}

/** The largest request body read (an agent's conversation with its system prompt and tools is a few hundred KiB). */
const MAX_BODY = 8 * 1024 * 1024;

export interface MockApiOptions {
  readonly host?: string;
  /** How long each answer waits, as a lab's would (0: at once). */
  readonly delayMs?: number;
}

export async function serveMockApi(answer: (req: MockRequest, res: ServerResponse) => void, options: MockApiOptions = {}): Promise<MockApiServer> {
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY) {
        res.writeHead(413).end();
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => {
      if (res.writableEnded) return;
      const url = new URL(req.url ?? "/", "http://stand-in");
      const reply = () => {
        if (res.writableEnded || res.destroyed) return;
        try {
          answer({ method: req.method ?? "", path: url.pathname, query: url.searchParams, headers: req.headers, body: Buffer.concat(chunks) }, res);
        } catch {
          if (!res.headersSent) res.writeHead(500);
          res.end();
        }
      };
      if ((options.delayMs ?? 0) > 0) setTimeout(reply, options.delayMs);
      else reply();
    });
  });
  // A WebSocket upgrade (Codex tries one before HTTP): refused plainly, so the client falls back at once.
  server.on("upgrade", (_req, socket) => socket.end("HTTP/1.1 426 Upgrade Required\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"));
  await new Promise<void>((resolve) => server.listen(0, options.host ?? "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The key a client sent: an API-key header or a bearer token (the test's own canary, never a real key). */
export function sentKey(headers: IncomingHttpHeaders, keyHeader: string): string | undefined {
  const first = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);
  return first(headers[keyHeader]) ?? first(headers.authorization)?.replace(/^Bearer\s+/i, "");
}

/** The body as JSON, or undefined when it is not. */
export function jsonBody<T>(body: Buffer): T | undefined {
  try {
    return JSON.parse(body.toString("utf8")) as T;
  } catch {
    return undefined;
  }
}

/** One server-sent event: a `data:` line, with an `event:` line when named. */
export function sseEvent(data: unknown, event?: string): string {
  return `${event !== undefined ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`;
}
