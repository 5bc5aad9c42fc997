import { expect } from "vitest";
import { inspect } from "node:util";
import { MeterCredential, MeterError, type AnthropicCostMeterConfig, type OpenaiCostsMeterConfig } from "../../src/meters/index.js";

/** The admin key the meters' tests plant: it must appear in no error, stack or printed configuration. */
export const CANARY = "sk-admin-canary-7f3c9e21d4b8a6f0e5d1c2b3a4";

/** Every form of the canary a careless error could carry. */
const FORMS = [CANARY, Buffer.from(CANARY).toString("base64"), Buffer.from(CANARY).toString("hex"), encodeURIComponent(CANARY)];

/** Every text an error shows — message, stack, string, inspection, JSON — and none holds the canary. */
export function expectNoCanary(error: unknown): void {
  const texts = [String(error), inspect(error, { depth: 5 }), JSON.stringify(error) ?? ""];
  if (error instanceof Error) texts.push(error.message, error.stack ?? "");
  for (const text of texts) for (const form of FORMS) expect(text).not.toContain(form);
}

/** The MeterError a read fails with; its every text checked for the canary. */
export async function meterError(p: Promise<unknown>): Promise<MeterError> {
  const error = await p.then(
    (value) => {
      throw new Error(`expected a MeterError, got ${JSON.stringify(value)}`);
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(MeterError);
  expectNoCanary(error);
  return error as MeterError;
}

export const anthropicConfig = (api: string, over: Partial<AnthropicCostMeterConfig> = {}): AnthropicCostMeterConfig => ({
  kind: "anthropic-cost",
  name: "claude-ws",
  team: "proj",
  lab: "anthropic",
  everyMs: 60_000,
  workspace: "wrkspc_01TEAM",
  api,
  key: new MeterCredential(CANARY),
  ...over,
});

export const openaiConfig = (api: string, over: Partial<OpenaiCostsMeterConfig> = {}): OpenaiCostsMeterConfig => ({
  kind: "openai-costs",
  name: "oai",
  team: "proj",
  lab: "openai",
  everyMs: 300_000,
  project: "proj_team",
  api,
  key: new MeterCredential(CANARY),
  ...over,
});

/** Unix milliseconds of a UTC time, `2026-11-02T12:00:00`. */
export const at = (text: string): number => Date.parse(`${text}Z`);

export const signal = (): AbortSignal => new AbortController().signal;
