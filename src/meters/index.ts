/**
 * Meters (§8): the owner's configuration of what reports each team's and lab's spend, and the
 * adapters that read it — Anthropic's cost report, OpenAI's costs, and the owner's own command.
 * The daemon reads them; the kernel's arithmetic (src/kernel/envelope-spend.ts) counts them.
 */
export { type MeterAdapter, type MeterReading, MeterError } from "./meter.js";
export {
  type AnthropicCostMeterConfig,
  type CommandMeterConfig,
  type MeterConfig,
  type MeterKind,
  type MetersLoad,
  type OpenaiCostsMeterConfig,
  ANTHROPIC_API,
  METER_KINDS,
  MIN_EVERY_MS,
  OPENAI_API,
  loadMeters,
  meterSecrets,
  metersPath,
  parseMeters,
} from "./config.js";
export { MeterCredential } from "./credential.js";
export { type HttpLimits, type ProviderMeterOptions, HTTP_LIMITS } from "./http.js";
export { ANTHROPIC_VERSION, createAnthropicCostMeter } from "./anthropic-cost.js";
export { createOpenaiCostsMeter } from "./openai-costs.js";
export { type CommandMeterOptions, COMMAND_MAX_OUTPUT_BYTES, COMMAND_TIMEOUT_MS, createCommandMeter } from "./command.js";
export { createMeter } from "./create.js";
