import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A stand-in for a lab's Messages API (POST /v1/messages), on the host's loopback, for running a
 * real agent CLI in a seat with no lab to reach. It plays a fixed script: the agent's main
 * conversation (a request offering tools) gets the script's step N, where N is how many tool
 * results the conversation carries so far — so each answer follows the agent's own progress,
 * and an agent that skipped or failed a step is seen doing so. Any other request (a side query:
 * a title, a quota probe) gets a short text. It speaks the streaming (server-sent events) and the
 * plain JSON forms. It records what it was asked (paths, headers that matter, the tool results
 * it was sent) for the test to assert on; it holds no key and checks none beyond recording
 * whether one came.
 */
export type ScriptStep = { readonly tool: string; readonly input: Record<string, unknown> } | { readonly text: string };

export interface SeenRequest {
  readonly path: string;
  readonly method: string;
  /** The x-api-key or bearer token the client sent (the test's own canary, never a real key). */
  readonly key?: string;
  readonly main: boolean;
  readonly step?: number;
  /** The text of each tool_result block in the conversation's last message. */
  readonly toolResults: readonly string[];
}

export interface MockMessagesApi {
  readonly port: number;
  readonly seen: readonly SeenRequest[];
  close(): Promise<void>;
}

interface ContentBlock {
  type?: string;
  content?: unknown;
  name?: string;
}
interface MessagesBody {
  stream?: boolean;
  model?: string;
  tools?: Array<{ name?: string }>;
  messages?: Array<{ role?: string; content?: unknown }>;
}

/** The largest request body read (an agent's conversation with its system prompt and tools is a few hundred KiB). */
const MAX_BODY = 8 * 1024 * 1024;

export async function startMockMessagesApi(script: readonly ScriptStep[], options: { host?: string } = {}): Promise<MockMessagesApi> {
  const seen: SeenRequest[] = [];
  let ids = 0;
  const server: Server = createServer((req, res) => {
    void answer(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_BODY) {
        res.writeHead(413).end();
        return;
      }
      chunks.push(chunk);
    }
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const key = headerText(req.headers["x-api-key"]) ?? headerText(req.headers.authorization)?.replace(/^Bearer\s+/i, "");
    if (req.method !== "POST" || path !== "/v1/messages") {
      // Other endpoints an agent may probe at start: an empty success, so it carries on.
      seen.push({ path, method: req.method ?? "", ...(key !== undefined ? { key } : {}), main: false, toolResults: [] });
      res.writeHead(req.method === "POST" || req.method === "GET" ? 200 : 404, { "content-type": "application/json" }).end("{}");
      return;
    }
    let body: MessagesBody;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as MessagesBody;
    } catch {
      res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify(apiError("invalid_request_error", "body is not JSON")));
      return;
    }
    const messages = Array.isArray(body.messages) ? body.messages : [];
    const main = (body.tools ?? []).some((tool) => tool.name === "Bash");
    const results = messages.flatMap((m) => (Array.isArray(m.content) ? (m.content as ContentBlock[]) : [])).filter((b) => b.type === "tool_result");
    const last = messages.at(-1);
    const lastResults = (Array.isArray(last?.content) ? (last.content as ContentBlock[]) : []).filter((b) => b.type === "tool_result").map(resultText);
    const step = main ? Math.min(results.length, script.length - 1) : undefined;
    seen.push({ path, method: "POST", ...(key !== undefined ? { key } : {}), main, ...(step !== undefined ? { step } : {}), toolResults: lastResults });
    const play: ScriptStep = step !== undefined ? (script[step] as ScriptStep) : { text: "ok" };
    const id = `msg_mock_${++ids}`;
    const model = body.model ?? "mock";
    const block = "tool" in play ? { type: "tool_use", id: `toolu_mock_${ids}`, name: play.tool, input: play.input } : { type: "text", text: play.text };
    const stop = "tool" in play ? "tool_use" : "end_turn";
    const usage = { input_tokens: 12, output_tokens: 8, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
    if (body.stream !== true) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ id, type: "message", role: "assistant", model, content: [block], stop_reason: stop, stop_sequence: null, usage }));
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    const event = (type: string, data: Record<string, unknown>) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    event("message_start", {
      message: { id, type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } },
    });
    if ("tool" in play) {
      event("content_block_start", { index: 0, content_block: { type: "tool_use", id: block.id, name: play.tool, input: {} } });
      event("content_block_delta", { index: 0, delta: { type: "input_json_delta", partial_json: JSON.stringify(play.input) } });
    } else {
      event("content_block_start", { index: 0, content_block: { type: "text", text: "" } });
      event("content_block_delta", { index: 0, delta: { type: "text_delta", text: play.text } });
    }
    event("content_block_stop", { index: 0 });
    event("message_delta", { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 8 } });
    event("message_stop", {});
    res.end();
  }
  await new Promise<void>((resolve) => server.listen(0, options.host ?? "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function resultText(block: ContentBlock): string {
  if (typeof block.content === "string") return block.content;
  if (Array.isArray(block.content)) return (block.content as Array<{ text?: unknown }>).map((c) => (typeof c.text === "string" ? c.text : "")).join("");
  return "";
}

function apiError(type: string, message: string) {
  return { type: "error", error: { type, message } };
}
