import type { ChannelOptions } from "@grpc/grpc-js";

/**
 * grpc-js settings for teamd's sockets, one place for server and client (and for the bench's
 * bare echo, so the baseline is the same grpc-js, configured the same).
 *
 * - Messages up to 16 MiB (a pack travels in chunks well below it).
 * - No channelz: teamd exposes no channelz service, and its per-call bookkeeping was ~2% of
 *   the daemon's CPU for a small call.
 * - No client retries: every call goes to a local daemon on a unix socket, where a transparent
 *   retry has nothing to route around; a failed call is reported (daemon unavailable) and the
 *   gated acts are idempotent by request id when the caller repeats them. The retry layer
 *   was ~5% of a small call's client CPU.
 */
const COMMON: ChannelOptions = {
  "grpc.max_receive_message_length": 16 * 1024 * 1024,
  "grpc.enable_channelz": 0,
};

export const SERVER_CHANNEL_OPTIONS: ChannelOptions = Object.freeze({ ...COMMON });

export const CLIENT_CHANNEL_OPTIONS: ChannelOptions = Object.freeze({ ...COMMON, "grpc.enable_retries": 0 });
