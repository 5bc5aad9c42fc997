export { createRpcServer, type RpcServer, type RpcServerOptions } from "./server.js";
export { createRpcClient, type RpcClient, type RpcClientOptions } from "./client.js";
export { RefusalError, DaemonUnavailableError, RpcError, UsageError } from "./errors.js";
export { PROTOCOL_VERSION, TEAMD_VERSION } from "./protocol.js";
export { SEAT_CHUNK_BYTES } from "./channel-options.js";
export type { CallContext, ServiceImpl, ServiceClient, AnyService } from "./service-types.js";
export { EXIT, reportError, runCli, type CliErrorReport, type ParsingProgram } from "./cli-outcome.js";
