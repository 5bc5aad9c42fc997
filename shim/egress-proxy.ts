import { connect, createServer, type Server, type Socket } from "node:net";
import { bigReads, type BigReads } from "../src/rpc/big-reads.js";

/**
 * The seat's egress proxy (§12), inside the seat's network namespace on loopback: plain HTTP
 * forward proxying (absolute-form request URLs) and CONNECT tunnels. It decides nothing: each
 * client connection becomes one stream to the daemon over the seat's egress socket, whose
 * first line is the target host:port — taken from the CONNECT line or the request URL, never
 * from a Host header — and the daemon answers `OK <address>` (then raw bytes) or
 * `NO <rule> <reason>`, which the client is shown as an HTTP 403 naming the rule (a failed
 * CONNECT is that 403 too). The daemon, not this file, is the check: a seat that skips the
 * proxy and writes its own header is decided the same way.
 *
 * Not built: SOCKS5 (ALL_PROXY points at this HTTP proxy; clients that speak only SOCKS fail
 * closed), proxy keep-alive across targets (each client connection carries one target; a
 * forwarded plain request is sent with `Connection: close`).
 */
const MAX_HEAD = 64 * 1024;
const HEAD_TIMEOUT_MS = 30_000;

export interface EgressProxyOptions {
  /** The seat's egress socket (inside the seat: /run/teamd/egress.sock). */
  readonly egressSocket: string;
}

export function createEgressProxy(options: EgressProxyOptions): Server {
  return createServer({ allowHalfOpen: true, noDelay: true }, (client) => {
    client.on("error", () => undefined);
    serve(client, options).catch(() => client.destroy());
  });
}

async function serve(client: Socket, options: EgressProxyOptions): Promise<void> {
  const head = await readUntil(client, "\r\n\r\n", MAX_HEAD, HEAD_TIMEOUT_MS);
  if (head === undefined) return answer(client, 400, "Bad Request", "teamd egress proxy: no complete request head");
  const text = head.line.toString("latin1");
  const [requestLine = "", ...headerLines] = text.split("\r\n");
  const [method = "", target = "", version = "HTTP/1.1"] = requestLine.split(" ");
  if (method === "CONNECT") {
    const daemon = await openStream(options.egressSocket, target, Buffer.alloc(0));
    if ("refused" in daemon) return answerRefusal(client, daemon.refused);
    client.write("HTTP/1.1 200 Connection established\r\n\r\n");
    return splice(client, daemon.socket, head.rest, daemon.download);
  }
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return answer(client, 400, "Bad Request", `teamd egress proxy: '${target.slice(0, 200)}' is not an absolute http:// URL (this is a proxy)`);
  }
  if (url.protocol !== "http:")
    return answer(
      client,
      400,
      "Bad Request",
      `teamd egress proxy: ${url.protocol} is not proxied as a plain request; use CONNECT (https:// through HTTPS_PROXY)`,
    );
  const authority = `${url.hostname}:${url.port || "80"}`;
  // Origin-form to the server; hop-by-hop proxy headers dropped; one request per connection.
  const kept = headerLines.filter((line) => line !== "" && !/^(proxy-connection|proxy-authorization|connection|keep-alive)\s*:/i.test(line));
  const rewritten = Buffer.from(`${method} ${url.pathname}${url.search} ${version}\r\n${[...kept, "Connection: close"].join("\r\n")}\r\n\r\n`, "latin1");
  const daemon = await openStream(options.egressSocket, authority, Buffer.concat([rewritten, head.rest]));
  if ("refused" in daemon) return answerRefusal(client, daemon.refused);
  return splice(client, daemon.socket, Buffer.alloc(0), daemon.download);
}

/** One stream to the daemon: the header line (and, for a plain request, the request pipelined behind it), then its answer. */
async function openStream(path: string, target: string, early: Buffer): Promise<{ socket: Socket; download: BigReads } | { refused: string }> {
  // The daemon's answers come through big reads (src/rpc/big-reads.ts): its line first, then the relayed bytes.
  const download = bigReads();
  const socket = connect({ path, allowHalfOpen: true, onread: download.onread });
  socket.on("error", () => undefined);
  const ready = await new Promise<boolean>((resolve) => {
    socket.once("connect", () => resolve(true));
    socket.once("error", () => resolve(false));
  });
  if (!ready) return { refused: "egress.unavailable the seat's egress socket could not be reached; teamd may be stopped" };
  socket.write(Buffer.concat([Buffer.from(`${target.replace(/[\r\n]/g, "")}\n`, "latin1"), early]));
  const line = await answerLine(socket, download, 4096, 60_000);
  if (line === undefined) {
    socket.destroy();
    return { refused: "egress.unavailable the daemon did not answer" };
  }
  if (line.startsWith("OK ")) return { socket, download };
  socket.destroy();
  return { refused: line.replace(/^NO /, "") };
}

function splice(client: Socket, daemon: Socket, toDaemon: Buffer, download: BigReads): void {
  if (toDaemon.length > 0) daemon.write(toDaemon);
  const closeBoth = () => {
    client.destroy();
    daemon.destroy();
  };
  client.once("error", closeBoth);
  daemon.once("error", closeBoth);
  client.once("close", () => daemon.destroySoon());
  daemon.once("close", () => client.destroySoon());
  client.pipe(daemon);
  download.attach(client, daemon);
  daemon.once("end", () => client.end());
}

/** The daemon's one-line answer, from what its stream delivered so far (bounded, timed); the line is consumed. */
function answerLine(socket: Socket, download: BigReads, max: number, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const finish = (line: string | undefined) => {
      clearTimeout(timer);
      socket.off("end", ended);
      download.onPending(() => undefined);
      resolve(line);
    };
    const check = () => {
      const pending = download.pending();
      const at = pending.indexOf(10);
      if (at >= 0) {
        const line = pending.subarray(0, at).toString("utf8");
        download.consume(at + 1);
        finish(line);
      } else if (pending.length > max) finish(undefined);
    };
    const ended = () => finish(undefined);
    const timer = setTimeout(ended, timeoutMs);
    socket.once("end", ended);
    download.onPending(check);
    check();
  });
}

/** `rule reason` → a 403 (a refusal) or 502 (unreachable), its rule in a header and the body. */
function answerRefusal(client: Socket, refused: string): void {
  const space = refused.indexOf(" ");
  const rule = space < 0 ? refused : refused.slice(0, space);
  const reason = space < 0 ? "" : refused.slice(space + 1);
  const status = rule === "egress.connect" || rule === "egress.unavailable" ? 502 : 403;
  // The rule rides in the reason phrase too: clients that never show a failed CONNECT's body
  // (git, Node agents) often show the phrase.
  const phrase = `${status === 403 ? "Forbidden" : "Bad Gateway"} (teamd ${/^[a-z.-]+$/.test(rule) ? rule : "egress"})`;
  answer(client, status, phrase, `teamd: refused by ${rule}: ${reason}`, rule);
}

function answer(client: Socket, status: number, phrase: string, body: string, rule?: string): void {
  const bytes = Buffer.from(`${body}\n`, "utf8");
  const ruleHeader = rule ? `X-Teamd-Rule: ${rule}\r\n` : "";
  client.end(
    `HTTP/1.1 ${status} ${phrase}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${bytes.length}\r\n${ruleHeader}Connection: close\r\n\r\n${bytes.toString("utf8")}`,
  );
}

/** Bytes up to a delimiter (bounded, timed), and what came after it; the socket is left paused. */
function readUntil(socket: Socket, delimiter: string, max: number, timeoutMs: number): Promise<{ line: Buffer; rest: Buffer } | undefined> {
  return new Promise((resolve) => {
    let buffered: Buffer = Buffer.alloc(0);
    const finish = (value: { line: Buffer; rest: Buffer } | undefined) => {
      clearTimeout(timer);
      socket.off("data", onData);
      socket.off("end", onEnd);
      socket.pause();
      resolve(value);
    };
    const onData = (chunk: Buffer) => {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      const at = buffered.indexOf(delimiter, 0, "latin1");
      if (at >= 0) finish({ line: buffered.subarray(0, at), rest: buffered.subarray(at + delimiter.length) });
      else if (buffered.length > max) finish(undefined);
    };
    const onEnd = () => finish(undefined);
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    socket.on("data", onData);
    socket.once("end", onEnd);
  });
}
