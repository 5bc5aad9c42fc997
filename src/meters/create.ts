import { createAnthropicCostMeter } from "./anthropic-cost.js";
import { createCommandMeter, type CommandMeterOptions } from "./command.js";
import type { MeterConfig } from "./config.js";
import type { ProviderMeterOptions } from "./http.js";
import type { MeterAdapter } from "./meter.js";
import { createOpenaiCostsMeter } from "./openai-costs.js";

/** The adapter for one configured meter, by its kind. */
export function createMeter(config: MeterConfig, options: ProviderMeterOptions & CommandMeterOptions = {}): MeterAdapter {
  switch (config.kind) {
    case "anthropic-cost":
      return createAnthropicCostMeter(config, options);
    case "openai-costs":
      return createOpenaiCostsMeter(config, options);
    case "command":
      return createCommandMeter(config, options);
  }
}
