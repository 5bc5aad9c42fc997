import { afterEach, describe, expect, it } from "vitest";
import { join } from "node:path";
import { ShimService, type PushRequest } from "../../src/gen/teamd/v1/shim_pb.js";
import { createRpcClient, createRpcServer, RefusalError } from "../../src/rpc/index.js";
import { makeTempHome } from "../support/programs.js";
import { withUnused } from "./unused-methods.js";

/**
 * Streaming calls over a real unix socket (server streaming: Fetch; client streaming:
 * Push): every message arrives in order, a refusal mid-stream reaches the caller with its
 * rule, and a caller that stops reading cancels the handler.
 */
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function serve(impl: Record<string, unknown>) {
  const home = await makeTempHome();
  const socketPath = join(home.dir, "s.sock");
  const server = createRpcServer({ socketPath, access: { mode: 0o600 }, channel: "seat:test" });
  server.addService(ShimService, withUnused(impl as Record<string, unknown>) as never);
  await server.listen();
  const client = createRpcClient(ShimService, socketPath);
  cleanups.push(async () => {
    client.close();
    await server.close(0);
    await home.remove();
  });
  return client;
}

describe("rpc streaming", () => {
  it("streams a server's messages in order, with backpressure, 64 MiB in 1 MiB chunks", async () => {
    const chunk = Buffer.alloc(1024 * 1024, 7);
    const client = await serve({
      async *fetch(request: { wants: string[] }) {
        for (let i = 0; i < 64; i++) yield { data: Buffer.concat([Buffer.from(`${request.wants[0]}:${i}:`), chunk]) };
      },
    });
    let count = 0;
    let bytes = 0;
    for await (const reply of client.fetch({ wants: ["w"] })) {
      expect(Buffer.from(reply.data.subarray(0, 8)).toString().startsWith(`w:${count}:`)).toBe(true);
      count++;
      bytes += reply.data.byteLength;
    }
    expect(count).toBe(64);
    expect(bytes).toBeGreaterThan(64 * 1024 * 1024);
  });

  it("carries a refusal thrown mid-stream to the caller with its rule", async () => {
    const client = await serve({
      async *fetch() {
        yield { data: Buffer.from("first") };
        throw new RefusalError("fetch.ref", "not yours to read");
      },
    });
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const reply of client.fetch({})) seen.push(Buffer.from(reply.data).toString());
      })(),
    ).rejects.toMatchObject({ rule: "fetch.ref", reason: "not yours to read" });
    expect(seen).toEqual(["first"]);
  });

  it("cancels the handler when the caller stops reading", async () => {
    let aborted = false;
    let produced = 0;
    const client = await serve({
      async *fetch(_request: unknown, context: { signal: AbortSignal }) {
        context.signal.addEventListener("abort", () => (aborted = true));
        for (let i = 0; i < 10_000 && !context.signal.aborted; i++) {
          produced++;
          yield { data: Buffer.alloc(64 * 1024) };
        }
      },
    });
    for await (const reply of client.fetch({})) {
      void reply;
      break;
    }
    for (let i = 0; i < 100 && !aborted; i++) await new Promise((r) => setTimeout(r, 20));
    expect(aborted).toBe(true);
    expect(produced).toBeLessThan(10_000);
  });

  it("reads a client's stream in order and answers once; a refusal answers with its rule", async () => {
    const client = await serve({
      async push(parts: AsyncIterable<PushRequest>) {
        const seen: string[] = [];
        for await (const part of parts) {
          expect(Object.isFrozen(part)).toBe(true);
          if (part.part.case === "header") seen.push(`h:${part.part.value.requestId}`);
          else if (part.part.case === "data") seen.push(`d:${part.part.value.byteLength}`);
        }
        if (seen.length > 4) throw new RefusalError("push.pack", "too many parts");
        return { results: seen.map((ref) => ({ ref, ok: true })) };
      },
    });
    async function* parts(n: number) {
      yield { part: { case: "header" as const, value: { requestId: "r1" } } };
      for (let i = 0; i < n; i++) yield { part: { case: "data" as const, value: Buffer.alloc(1000 + i) } };
    }
    const reply = await client.push(parts(3));
    expect(reply.results.map((r) => r.ref)).toEqual(["h:r1", "d:1000", "d:1001", "d:1002"]);
    await expect(client.push(parts(10))).rejects.toMatchObject({ rule: "push.pack" });
  });

  it("ends a client stream read to its end without destroying it (no AbortError's stack is formatted), and answers one that stopped early", async () => {
    const client = await serve({
      async push(parts: AsyncIterable<PushRequest>) {
        const iterator = parts[Symbol.asyncIterator]();
        const first = await iterator.next();
        const all = first.done !== true && first.value.part.case === "header" && first.value.part.value.requestId === "all";
        let count = 1;
        if (all) while (!(await iterator.next()).done) count++;
        else await iterator.return?.(undefined);
        return { results: [{ ref: String(count), ok: true }] };
      },
    });
    async function* parts(id: string, n: number) {
      yield { part: { case: "header" as const, value: { requestId: id } } };
      for (let i = 0; i < n; i++) yield { part: { case: "data" as const, value: Buffer.alloc(100) } };
    }
    // Node formats a destroyed stream's error's stack at once (its checkError); counted here.
    let aborts = 0;
    const previous = Error.prepareStackTrace;
    Error.prepareStackTrace = (error, frames) => {
      if (error.name === "AbortError") aborts++;
      return previous !== undefined ? previous(error, frames) : `${String(error)}${frames.map((f) => `\n    at ${f.toString()}`).join("")}`;
    };
    try {
      for (let i = 0; i < 5; i++) expect((await client.push(parts("all", 3))).results[0]?.ref).toBe("4");
      expect(aborts).toBe(0);
    } finally {
      Error.prepareStackTrace = previous;
    }
    // A handler that stops reading still answers, and the caller gets that answer.
    expect((await client.push(parts("first", 1))).results[0]?.ref).toBe("1");
  });

  it("sends 48 MiB up a client stream with backpressure, and no listener piles up on the stream while it waits (no warning)", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on("warning", onWarning);
    cleanups.push(async () => void process.off("warning", onWarning));
    const client = await serve({
      async push(parts: AsyncIterable<PushRequest>) {
        let bytes = 0;
        for await (const part of parts) if (part.part.case === "data") bytes += part.part.value.byteLength;
        return { results: [{ ref: String(bytes), ok: true }] };
      },
    });
    // In the seat socket's chunks (its receive cap is 256 KiB a message).
    const chunk = Buffer.alloc(128 * 1024, 5);
    async function* parts() {
      yield { part: { case: "header" as const, value: { requestId: "big" } } };
      for (let i = 0; i < 48 * 8; i++) yield { part: { case: "data" as const, value: chunk } };
    }
    const reply = await client.push(parts());
    expect(reply.results[0]?.ref).toBe(String(48 * 1024 * 1024));
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings).toEqual([]);
  });
});
