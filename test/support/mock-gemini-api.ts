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
 * A stand-in for Google's Gemini API (POST /v1beta/models/MODEL:generateContent, its streaming
 * form :streamGenerateContent?alt=sse, and :countTokens), on the host's loopback, for running
 * Gemini CLI in a seat with no lab to reach (GOOGLE_GEMINI_BASE_URL: docs/agents.md). It plays a
 * fixed script (mock-api-server.ts: step N for a conversation carrying N function responses);
 * the main conversation is the one offering the `run_shell_command` tool, and a tool step is a
 * function call. A side query that asks for JSON to a schema (the CLI's model router, its
 * next-speaker check) gets an object of that schema's shape; any other, a short text.
 */
interface Part {
  text?: string;
  functionResponse?: { name?: string; response?: unknown };
}
interface Schema {
  type?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  enum?: unknown[];
}
interface GenerateBody {
  contents?: Array<{ role?: string; parts?: Part[] }>;
  tools?: Array<{ functionDeclarations?: Array<{ name?: string }> }>;
  generationConfig?: { responseMimeType?: string; responseJsonSchema?: Schema; responseSchema?: Schema };
}

const METHOD = /^\/v1(?:beta|alpha)?\/models\/([^/:]+):(generateContent|streamGenerateContent|countTokens)$/;

export async function startMockGeminiApi(script: readonly ScriptStep[], options: MockApiOptions = {}): Promise<MockLabApi> {
  const seen: SeenRequest[] = [];
  function answer(req: MockRequest, res: ServerResponse): void {
    const key = sentKey(req.headers, "x-goog-api-key") ?? req.query.get("key") ?? undefined;
    const base = { path: req.path, method: req.method, ...(key !== undefined ? { key } : {}) };
    const method = METHOD.exec(req.path);
    const body = req.method === "POST" && method !== null ? jsonBody<GenerateBody>(req.body) : undefined;
    if (method === null || body === undefined) {
      seen.push({ ...base, main: false, toolResults: [] });
      res
        .writeHead(404, { "content-type": "application/json" })
        .end(JSON.stringify({ error: { code: 404, message: `no ${req.method} ${req.path} here`, status: "NOT_FOUND" } }));
      return;
    }
    if (method[2] === "countTokens") {
      seen.push({ ...base, main: false, toolResults: [] });
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ totalTokens: 12 }));
      return;
    }
    const contents = Array.isArray(body.contents) ? body.contents : [];
    const main = (body.tools ?? []).some((tool) => (tool.functionDeclarations ?? []).some((f) => f.name === "run_shell_command"));
    const responses = (parts: Part[] | undefined) => (parts ?? []).filter((p) => p.functionResponse !== undefined);
    const results = contents.flatMap((c) => responses(c.parts));
    const lastResults = responses(contents.at(-1)?.parts).map((p) => JSON.stringify(p.functionResponse?.response ?? null));
    const schema = body.generationConfig?.responseJsonSchema ?? body.generationConfig?.responseSchema;
    const side: ScriptStep = { text: schema !== undefined ? JSON.stringify(shaped(schema)) : "ok" };
    const { step, play } = main ? scriptStep(script, results.length) : { step: undefined, play: side };
    seen.push({ ...base, main, ...(step !== undefined ? { step } : {}), toolResults: lastResults });
    const part = "tool" in play ? { functionCall: { name: play.tool, args: play.input } } : { text: play.text };
    const chunk = {
      candidates: [{ content: { role: "model", parts: [part] }, finishReason: "STOP", index: 0 }],
      usageMetadata: { promptTokenCount: 12, candidatesTokenCount: 8, totalTokenCount: 20 },
      modelVersion: method[1],
    };
    if (method[2] === "generateContent") {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(chunk));
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.end(sseEvent(chunk));
  }
  const server = await serveMockApi(answer, options);
  return { port: server.port, seen, close: () => server.close() };
}

/** A value of the schema's shape: every property filled, the first of an enum, 1 for a number, and "user" for a string (so a next-speaker check hands the turn back). */
function shaped(schema: Schema): unknown {
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  switch ((schema.type ?? "").toLowerCase()) {
    case "object":
      return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([name, inner]) => [name, shaped(inner)]));
    case "array":
      return schema.items !== undefined ? [shaped(schema.items)] : [];
    case "integer":
    case "number":
      return 1;
    case "boolean":
      return false;
    default:
      return "user";
  }
}
