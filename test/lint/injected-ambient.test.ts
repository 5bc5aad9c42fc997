import { describe, expect, it } from "vitest";
import { ESLint } from "eslint";
import { join } from "node:path";
import { ROOT } from "../support/programs.js";

/**
 * Wall 10 (eslint-rules/injected-ambient.js): in daemon/, the clock and ids come in through
 * the composition root or the CLI's entry; daemon/host/ambient.ts alone makes the real ones.
 * Each case lints source text as if it lived at the given path, through the project's real
 * eslint.config.js, and looks only at this rule's findings.
 */
const eslint = new ESLint({ cwd: ROOT });

async function problems(code: string, file: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(ROOT, file) });
  return (result?.messages ?? []).filter((m) => m.ruleId === "teamd/injected-ambient" || m.ruleId === null).map((m) => `${m.ruleId}: ${m.message}`);
}

const violations: Array<[string, string, RegExp]> = [
  ["Date.now()", `export const t = () => Date.now();`, /clock is injected.*not Date\.now\(\)/],
  ["new Date()", `export const t = () => new Date().toISOString();`, /clock is injected.*not new Date\(\)/],
  ["Date()", `export const t = () => Date();`, /clock is injected.*not Date\(\)/],
  ["randomUUID() from node:crypto", `import { randomUUID } from "node:crypto";\nexport const id = () => randomUUID();`, /ids are injected.*not randomUUID\(\)/],
  ["crypto.randomUUID()", `import * as crypto from "node:crypto";\nexport const id = () => crypto.randomUUID();`, /ids are injected/],
];

const ROOMS = [
  "daemon/commands/x.ts",
  "daemon/server/x.ts",
  "daemon/lifecycle/x.ts",
  "daemon/owner/x.ts",
  "daemon/seat/x.ts",
  "daemon/host/x.ts",
  "daemon/cli.ts",
];

describe("injected-ambient lint rule (wall 10)", () => {
  it.each(violations)("refuses %s in every room of daemon/", async (_name, code, expected) => {
    for (const file of ROOMS) expect((await problems(code, file)).join("\n"), file).toMatch(expected);
  });

  it("lets daemon/host/ambient.ts make the real clock and id source", async () => {
    const code = `import { randomUUID } from "node:crypto";\nexport const REAL = Object.freeze({ now: () => Date.now(), newId: () => randomUUID() });`;
    expect(await problems(code, "daemon/host/ambient.ts")).toEqual([]);
  });

  it("stays quiet on injected time and ids, and on formatting a time given", async () => {
    const code = `export const stamp = (now: () => number, newId: () => string) => \`\${new Date(now()).toISOString()} \${newId()}\`;`;
    expect(await problems(code, "daemon/server/x.ts")).toEqual([]);
  });

  it("does not apply outside daemon/", async () => {
    expect(await problems(`export const t = () => Date.now();`, "src/ledger/x.ts")).toEqual([]);
    expect(await problems(`export const t = () => Date.now();`, "test/daemon/x.test.ts")).toEqual([]);
  });
});
