import type { ChannelOptions } from "@grpc/grpc-js";

/**
 * grpc-js settings for teamd's sockets, one place for server and client (and for the bench's
 * bare echo, so the baseline is the same grpc-js, configured the same).
 *
 * - No channelz: teamd exposes no channelz service, and its per-call bookkeeping was ~2% of
 *   the daemon's CPU for a small call.
 * - No client retries: every call goes to a local daemon on a unix socket, where a transparent
 *   retry has nothing to route around; a failed call is reported (daemon unavailable) and the
 *   gated acts are idempotent by request id when the caller repeats them. The retry layer
 *   was ~5% of a small call's client CPU.
 */
const COMMON: ChannelOptions = {
  "grpc.enable_channelz": 0,
};

/**
 * A seat's socket (issue 20, finding 3): the seat is hostile, and the daemon's death would end
 * every seat, so every byte the server holds for it is bounded. grpc-js 1.14 buffers each
 * message whole until its last byte arrives, so what one connection can make the daemon hold
 * is its streams times the receive cap (plus each stream's 64 KiB flow-control window); the
 * connections of one socket are bounded by the server itself (`SEAT_MAX_CONNECTIONS`, where
 * grpc-js has no option). Read in grpc-js's server.js / server-interceptors.js, all honoured:
 *
 * - `grpc.max_receive_message_length` 256 KiB: a longer message is refused (RESOURCE_EXHAUSTED)
 *   from its 5-byte prefix, before its body is read. File content and pack bytes travel in
 *   chunks of `SEAT_CHUNK_BYTES`.
 * - `grpc.max_concurrent_streams` 16 per connection (HTTP/2 SETTINGS; a 17th stream is refused
 *   by the peer's own HTTP/2 layer or queued by a grpc-js client until one ends).
 * - `grpc-node.max_session_memory` 4 MiB: node's per-session credit for what nghttp2 holds
 *   (headers, frames not yet handed over, replies not yet sent); past it, new streams are
 *   refused. grpc-js otherwise sets it to "unlimited".
 * - `grpc.max_connection_idle_ms` 10 s: a connection with no open stream is closed (GOAWAY);
 *   a grpc-js client reconnects on its next call.
 * - keepalive: a ping every 30 s, and a connection that does not answer in 10 s is closed.
 */
export const SEAT_RECEIVE_BYTES = 256 * 1024;

/** What a seat's client sends per message of a byte stream (file content, a pack): well under the receive cap. */
export const SEAT_CHUNK_BYTES = 128 * 1024;

/** Connections one seat's socket serves at once; one more is closed on arrival (and logged). */
export const SEAT_MAX_CONNECTIONS = 8;

export const SEAT_SERVER_OPTIONS: ChannelOptions = Object.freeze({
  ...COMMON,
  "grpc.max_receive_message_length": SEAT_RECEIVE_BYTES,
  "grpc.max_concurrent_streams": 16,
  "grpc-node.max_session_memory": 4,
  "grpc.max_connection_idle_ms": 10_000,
  "grpc.keepalive_time_ms": 30_000,
  "grpc.keepalive_timeout_ms": 10_000,
});

/**
 * The owner's control socket (mode 0600 / group teamd: only the owner reaches it): messages up
 * to 16 MiB, as before. Its callers are the owner's own CLI and nothing a seat controls.
 */
export const CONTROL_SERVER_OPTIONS: ChannelOptions = Object.freeze({ ...COMMON, "grpc.max_receive_message_length": 16 * 1024 * 1024 });

/** The bench's bare echo is measured against the seat socket's configuration. */
export const SERVER_CHANNEL_OPTIONS: ChannelOptions = SEAT_SERVER_OPTIONS;

/** Clients read replies up to 16 MiB (a fetch streams its pack in chunks well below it). */
export const CLIENT_CHANNEL_OPTIONS: ChannelOptions = Object.freeze({
  ...COMMON,
  "grpc.max_receive_message_length": 16 * 1024 * 1024,
  "grpc.enable_retries": 0,
});
