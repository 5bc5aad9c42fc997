import { describe, expect, it } from "vitest";
import { ESLint } from "eslint";
import { join } from "node:path";
import { ROOT } from "../support/programs.js";

/**
 * Wall 8 (eslint-rules/seat-refusals.js): inside daemon/seat/, only the pipeline constructs a
 * RefusalError, so every refusal a seat meets is recorded through it. Each case lints source
 * text as if it lived at the given path, through the project's real eslint.config.js.
 */
const eslint = new ESLint({ cwd: ROOT });

async function problems(code: string, file: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(ROOT, file) });
  return (result?.messages ?? []).map((m) => `${m.ruleId}: ${m.message}`);
}

const IMPORT = `import { RefusalError } from "../../src/rpc/index.js";\n`;

const violations: Array<[string, string]> = [
  ["new RefusalError", `${IMPORT}export const no = () => new RefusalError("rpc.malformed", "no");`],
  [
    "RefusalError.from",
    `${IMPORT}import { refuse } from "../../src/kernel/index.js";\nexport const no = () => RefusalError.from(refuse("broker.replay", "no"));`,
  ],
  ["a renamed import", `import { RefusalError as Refused } from "../../src/rpc/index.js";\nexport const no = () => new Refused("rpc.malformed", "no");`],
  ["a namespace import", `import * as rpc from "../../src/rpc/index.js";\nexport const no = () => new rpc.RefusalError("rpc.malformed", "no");`],
  ["a subclass", `${IMPORT}export class Quiet extends RefusalError {}`],
];

describe("wall 8: only the seat pipeline constructs a RefusalError", () => {
  it.each(violations)("refuses %s in a daemon/seat/ handler", async (_name, code) => {
    const found = await problems(code, "daemon/seat/violation.ts");
    expect(found.join("\n")).toMatch(/teamd\/seat-refusals: wall 8: only daemon\/seat\/pipeline.ts constructs a RefusalError/);
  });

  it("refuses it in the shim service too", async () => {
    const found = await problems(`${IMPORT}export const no = () => new RefusalError("rpc.malformed", "no");`, "daemon/seat/shim-service.ts");
    expect(found.join("\n")).toMatch(/teamd\/seat-refusals/);
  });

  it("lets a handler read a refusal (instanceof, types) and refuse through the pipeline", async () => {
    const code = `${IMPORT}import { refuse } from "../../src/kernel/index.js";
import type { SeatContext, SeatPipeline } from "./pipeline.js";
export const isRefusal = (e: unknown): e is RefusalError => e instanceof RefusalError;
export async function no(pipeline: SeatPipeline, ctx: SeatContext): Promise<never> {
  throw await pipeline.refuse(ctx, refuse("rpc.malformed", "no"), "git.push");
}`;
    expect((await problems(code, "daemon/seat/clean.ts")).filter((p) => p.startsWith("teamd/seat-refusals"))).toEqual([]);
  });

  it("does not fire in the pipeline itself", async () => {
    const code = `${IMPORT}export const no = () => new RefusalError("rpc.malformed", "no");`;
    expect((await problems(code, "daemon/seat/pipeline.ts")).filter((p) => p.startsWith("teamd/seat-refusals"))).toEqual([]);
  });

  it.each(["daemon/owner/violation.ts", "daemon/lifecycle/violation.ts", "daemon/server/violation.ts", "src/rpc/violation.ts"])(
    "does not apply outside daemon/seat/ (%s)",
    async (file) => {
      const code = `import { RefusalError } from "${file.startsWith("src/") ? "./index.js" : "../../src/rpc/index.js"}";\nexport const no = () => new RefusalError("rpc.malformed", "no");`;
      expect((await problems(code, file)).filter((p) => p.startsWith("teamd/seat-refusals"))).toEqual([]);
    },
  );

  it("leaves the kernel's own no-restricted-syntax in force beside it (no block replaces another)", async () => {
    const found = await problems(`export const f = new Function("return 1");`, "src/kernel/violation.ts");
    expect(found.join("\n")).toMatch(/no Function constructor/);
  });
});
