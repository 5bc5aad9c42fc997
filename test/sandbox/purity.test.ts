import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { ESLint } from "eslint";
import { ROOT } from "../support/programs.js";

// The project's own list of ambient globals (eslint.config.js, plain JS without types).
const CONFIG = join(ROOT, "eslint.config.js");
const { kernelRules } = (await import(CONFIG)) as { kernelRules: Record<string, unknown> };

/**
 * The plan compiler and the argv/profile builders are pure (DESIGN.md, after srt's model):
 * no I/O, no clock, no environment. They live outside src/kernel/, so the kernel's lint rule
 * does not watch them; this test does. A pure file may import (for values) only other pure
 * files and the kernel; type-only imports are erased and may name anything.
 */
const PURE = [
  "src/objects/object-id.ts",
  "src/objects/paths.ts",
  "src/sandbox/bwrap-args.ts",
  "src/sandbox/bwrap-failure.ts",
  "src/sandbox/etc-filter.ts",
  "src/sandbox/linux-base.ts",
  "src/sandbox/plan-egress.ts",
  "src/sandbox/seat-profile.ts",
  "src/sandbox/plan-env.ts",
  "src/sandbox/plan-limits.ts",
  "src/sandbox/plan-masks.ts",
  "src/sandbox/plan-types.ts",
  "src/sandbox/plan.ts",
  "src/sandbox/refusal.ts",
  "src/sandbox/rlimit-args.ts",
  "src/sandbox/seatbelt-profile.ts",
];

function valueImports(file: string): string[] {
  const text = readFileSync(join(ROOT, file), "utf8");
  const specs: string[] = [];
  for (const m of text.matchAll(/^\s*(import|export)\s+(type\s+)?[^;]*?from\s+"([^"]+)"/gm)) if (!m[2]) specs.push(m[3] as string);
  for (const m of text.matchAll(/import\(\s*([^)]*)\)/g)) specs.push(m[1] as string);
  return specs;
}

describe("the pure sandbox and object builders", () => {
  it.each(PURE)("%s imports only pure files and the kernel", (file) => {
    for (const spec of valueImports(file)) {
      expect(spec.startsWith(".")).toBe(true);
      const target = relative(ROOT, resolve(dirname(join(ROOT, file)), spec)).replace(/\.js$/, ".ts");
      expect(PURE.includes(target) || target.startsWith("src/kernel/")).toBe(true);
    }
  });

  it("touch no ambient global (clock, process, timers, randomness)", async () => {
    const eslint = new ESLint({
      cwd: ROOT,
      overrideConfigFile: true,
      overrideConfig: [
        { files: ["**/*.ts"], languageOptions: { parser: (await import("typescript-eslint")).parser } },
        {
          files: ["**/*.ts"],
          rules: {
            "no-restricted-globals": kernelRules["no-restricted-globals"] as never,
            "no-restricted-properties": kernelRules["no-restricted-properties"] as never,
          },
        },
      ],
    });
    const results = await eslint.lintFiles(PURE.map((f) => join(ROOT, f)));
    const problems = results.flatMap((r) => r.messages.map((m) => `${relative(ROOT, r.filePath)}:${m.line} ${m.message}`));
    expect(problems).toEqual([]);
  });

  it("the lint would catch one", async () => {
    const eslint = new ESLint({
      cwd: ROOT,
      overrideConfigFile: true,
      overrideConfig: [
        { files: ["**/*.ts"], languageOptions: { parser: (await import("typescript-eslint")).parser } },
        { files: ["**/*.ts"], rules: { "no-restricted-globals": kernelRules["no-restricted-globals"] as never } },
      ],
    });
    const [result] = await eslint.lintText("export const e = () => process.env.HOME;", { filePath: join(ROOT, "src/sandbox/x.ts") });
    expect(result?.messages.length).toBeGreaterThan(0);
  });
});
