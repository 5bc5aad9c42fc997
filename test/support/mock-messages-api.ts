import type { ServerResponse } from "node:http";
import {
  jsonBody,
  scriptStep,
  sentKey,
  serveMockApi,
  sseEvent,
  type MockApiOptions,
  type MockLabApi,
  type MockRequest,
  type ScriptStep,
  type SeenRequest,
} from "./mock-api-server.js";

/**
 * A stand-in for Anthropic's Messages API (POST /v1/messages), on the host's loopback, for running
 * Claude Code in a seat with no lab to reach. It plays a fixed script (mock-api-server.ts: step N
 * for a conversation carrying N tool results); the main conversation is the one offering the
 * Bash tool. Any other request (a side query: a title, a quota probe) gets a short text, and any
 * other endpoint an empty success. It speaks the streaming (server-sent events) and the plain
 * JSON forms.
 */
export type { ScriptStep, SeenRequest } from "./mock-api-server.js";
export type MockMessagesApi = MockLabApi;

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

export async function startMockMessagesApi(script: readonly ScriptStep[], options: MockApiOptions = {}): Promise<MockMessagesApi> {
  const seen: SeenRequest[] = [];
  let ids = 0;
  function answer(req: MockRequest, res: ServerResponse): void {
    const key = sentKey(req.headers, "x-api-key");
    const base = { path: req.path, method: req.method, ...(key !== undefined ? { key } : {}) };
    if (req.method !== "POST" || req.path !== "/v1/messages") {
      // Other endpoints an agent may probe at start: an empty success, so it carries on.
      seen.push({ ...base, main: false, toolResults: [] });
      res.writeHead(req.method === "POST" || req.method === "GET" ? 200 : 404, { "content-type": "application/json" }).end("{}");
      return;
    }
    const body = jsonBody<MessagesBody>(req.body);
    if (body === undefined) {
      res
        .writeHead(400, { "content-type": "application/json" })
        .end(JSON.stringify({ type: "error", error: { type: "invalid_request_error", message: "body is not JSON" } }));
      return;
    }
    const messages = Array.isArray(body.messages) ? body.messages : [];
    const main = (body.tools ?? []).some((tool) => tool.name === "Bash");
    const blocks = (content: unknown) => (Array.isArray(content) ? (content as ContentBlock[]) : []).filter((b) => b.type === "tool_result");
    const results = messages.flatMap((m) => blocks(m.content));
    const lastResults = blocks(messages.at(-1)?.content).map(resultText);
    const { step, play } = main ? scriptStep(script, results.length) : { step: undefined, play: { text: "ok" } as ScriptStep };
    seen.push({ ...base, main, ...(step !== undefined ? { step } : {}), toolResults: lastResults });
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
    const event = (type: string, data: Record<string, unknown>) => res.write(sseEvent({ type, ...data }, type));
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
  const server = await serveMockApi(answer, options);
  return { port: server.port, seen, close: () => server.close() };
}

function resultText(block: ContentBlock): string {
  if (typeof block.content === "string") return block.content;
  if (Array.isArray(block.content)) return (block.content as Array<{ text?: unknown }>).map((c) => (typeof c.text === "string" ? c.text : "")).join("");
  return "";
}
