import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "vitest";

/**
 * Golden files: the expected output is committed next to the tests and compared byte for
 * byte. TEAMD_UPDATE_GOLDEN=1 rewrites them (then review the diff — a golden file that
 * changes is a plan that changes).
 */
export const GOLDEN_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "golden");

export function expectGolden(name: string, text: string): void {
  const path = join(GOLDEN_DIR, name);
  if (process.env.TEAMD_UPDATE_GOLDEN === "1") {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
  }
  let expected: string;
  try {
    expected = readFileSync(path, "utf8");
  } catch {
    throw new Error(`golden file ${name} is missing; run with TEAMD_UPDATE_GOLDEN=1 once and review it`);
  }
  expect(text).toBe(expected);
}

export function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}
