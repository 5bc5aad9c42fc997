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
 * A stand-in for OpenAI's Responses API (POST /v1/responses), on the host's loopback, for running
 * Codex CLI in a seat with no lab to reach (as a custom model provider: docs/agents.md). It plays
 * a fixed script (mock-api-server.ts: step N for a conversation carrying N tool outputs); the main
 * conversation is the one offering the `exec_command` tool, and a tool step is a function call.
 * It speaks the streaming (server-sent events) and the plain JSON forms; a WebSocket upgrade is
 * refused (the client falls back to HTTP), any other endpoint is a 404.
 */
interface InputItem {
  type?: string;
  output?: unknown;
}
interface ResponsesBody {
  stream?: boolean;
  model?: string;
  tools?: Array<{ name?: string }>;
  input?: InputItem[] | string;
}

export async function startMockResponsesApi(script: readonly ScriptStep[], options: MockApiOptions = {}): Promise<MockLabApi> {
  const seen: SeenRequest[] = [];
  let ids = 0;
  function answer(req: MockRequest, res: ServerResponse): void {
    const key = sentKey(req.headers, "x-api-key");
    const base = { path: req.path, method: req.method, ...(key !== undefined ? { key } : {}) };
    const body = req.method === "POST" && req.path === "/v1/responses" ? jsonBody<ResponsesBody>(req.body) : undefined;
    if (body === undefined) {
      seen.push({ ...base, main: false, toolResults: [] });
      res
        .writeHead(404, { "content-type": "application/json" })
        .end(JSON.stringify({ error: { message: `no ${req.method} ${req.path} here`, type: "invalid_request_error" } }));
      return;
    }
    const input = Array.isArray(body.input) ? body.input : [];
    const main = (body.tools ?? []).some((tool) => tool.name === "exec_command");
    const outputs = input.filter((item) => item.type === "function_call_output");
    // The outputs the conversation ends with: what the agent's last tool calls gave.
    const trailing: string[] = [];
    for (const item of [...input].reverse()) {
      if (item.type === "function_call") continue;
      if (item.type !== "function_call_output") break;
      trailing.unshift(typeof item.output === "string" ? item.output : JSON.stringify(item.output));
    }
    const { step, play } = main ? scriptStep(script, outputs.length) : { step: undefined, play: { text: "ok" } as ScriptStep };
    seen.push({ ...base, main, ...(step !== undefined ? { step } : {}), toolResults: trailing });
    const id = `resp_mock_${++ids}`;
    const item =
      "tool" in play
        ? {
            type: "function_call",
            id: `fc_mock_${ids}`,
            call_id: `call_mock_${ids}`,
            name: play.tool,
            arguments: JSON.stringify(play.input),
            status: "completed",
          }
        : {
            type: "message",
            id: `msg_mock_${ids}`,
            role: "assistant",
            status: "completed",
            content: [{ type: "output_text", text: play.text, annotations: [] }],
          };
    const usage = {
      input_tokens: 12,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 8,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 20,
    };
    const response = { id, object: "response", status: "completed", model: body.model ?? "stand-in", output: [item], usage };
    if (body.stream !== true) {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(response));
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    const event = (type: string, data: Record<string, unknown>) => res.write(sseEvent({ type, ...data }, type));
    event("response.created", { response: { ...response, status: "in_progress", output: [], usage: null } });
    event("response.output_item.added", { output_index: 0, item });
    event("response.output_item.done", { output_index: 0, item });
    event("response.completed", { response });
    res.end();
  }
  const server = await serveMockApi(answer, options);
  return { port: server.port, seen, close: () => server.close() };
}
