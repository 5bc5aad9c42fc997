import { describe, expect, it } from "vitest";
import { ESLint } from "eslint";
import { join } from "node:path";
import { ROOT } from "../support/programs.js";

/**
 * The kernel purity rule must fail on every way a kernel file could reach the world, and
 * must not fire on a clean kernel file or outside src/kernel/. Each case lints source text
 * as if it lived at the given path, through the project's real eslint.config.js.
 */
const eslint = new ESLint({ cwd: ROOT });

async function problems(code: string, file: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(ROOT, file) });
  return (result?.messages ?? []).map((m) => `${m.ruleId}: ${m.message}`);
}

const violations: Array<[string, string, RegExp]> = [
  ["a node: built-in", `import { readFileSync } from "node:fs";\nexport const f = readFileSync;`, /Node built-in/],
  ["a bare built-in", `import { createHash } from "crypto";\nexport const h = createHash;`, /Node built-in/],
  ["a package", `import { parse } from "yaml";\nexport const p = parse;`, /is a package/],
  ["another src/ folder", `import { x } from "../ledger/store.js";\nexport const y = x;`, /leaves src\/kernel/],
  ["the daemon", `export * from "../../daemon/server/daemon.js";`, /leaves src\/kernel/],
  ["a dynamic import", `export const m = () => import("node:child_process");`, /Node built-in/],
  ["a computed dynamic import", `export const m = (p: string) => import(p);`, /computed module specifier/],
  ["Date", `export const now = () => Date.now();`, /'Date' reaches the world/],
  ["Math.random", `export const r = () => Math.random();`, /randomness/],
  ["crypto global", `export const id = () => crypto.randomUUID();`, /'crypto' reaches the world/],
  ["process", `export const e = () => process.env.HOME;`, /'process' reaches the world/],
  ["fetch", `export const g = () => fetch("http://127.0.0.1/");`, /'fetch' reaches the world/],
  ["a timer", `export const t = (f: () => void) => setTimeout(f, 1);`, /'setTimeout' reaches the world/],
  ["performance", `export const p = () => performance.now();`, /'performance' reaches the world/],
  ["globalThis", `export const g = () => (globalThis as { x?: number }).x;`, /'globalThis' reaches the world/],
];

describe("kernel purity lint rule", () => {
  it.each(violations)("refuses %s in src/kernel/", async (_name, code, expected) => {
    const found = await problems(code, "src/kernel/violation.ts");
    expect(found.join("\n")).toMatch(expected);
  });

  it("refuses a violation in a nested kernel folder too", async () => {
    const found = await problems(`import { a } from "../../rpc/index.js";\nexport const b = a;`, "src/kernel/scope/deep.ts");
    expect(found.join("\n")).toMatch(/leaves src\/kernel/);
  });

  it("accepts a pure kernel file importing only the kernel", async () => {
    const code = `import type { RuleId } from "./rules.js";\nimport { refuse } from "./decision.js";\nexport const no = (rule: RuleId) => refuse(rule, "no");`;
    expect(await problems(code, "src/kernel/clean.ts")).toEqual([]);
  });

  it("does not apply outside src/kernel/", async () => {
    const code = `import { readFileSync } from "node:fs";\nexport const now = () => [Date.now(), readFileSync];`;
    expect(await problems(code, "src/ledger/outside.ts")).toEqual([]);
  });

  it("keeps @grpc/grpc-js behind src/rpc/", async () => {
    const found = await problems(`import * as grpc from "@grpc/grpc-js";\nexport const g = grpc;`, "daemon/uses-grpc.ts");
    expect(found.join("\n")).toMatch(/Only src\/rpc\/ imports @grpc\/grpc-js/);
  });
});
