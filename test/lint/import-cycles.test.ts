import { afterAll, describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { ROOT } from "../support/programs.js";

/**
 * The import-circle check that `npm run lint` runs after eslint (eslint-rules/import-cycles.js,
 * plain JS without types) must find a circle however it is tied — a plain import, a
 * type-only import, an `export * from` — and find none in a clean tree or in this one.
 */
interface ImportCycle {
  files: string[];
  chain: string[];
  edges: Array<[string, string]>;
}
const { findImportCycles, formatCycles } = (await import(join(ROOT, "eslint-rules/import-cycles.js"))) as {
  findImportCycles: (root: string, options?: { roots?: string[]; exclude?: string[] }) => ImportCycle[];
  formatCycles: (cycles: ImportCycle[]) => string;
};

const temps: string[] = [];
afterAll(() => {
  for (const t of temps) rmSync(t, { recursive: true, force: true });
});

/** A fixture tree in a temp dir: repo-relative path -> source text. */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "teamd-cycles-"));
  temps.push(root);
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, rel)), { recursive: true });
    writeFileSync(join(root, rel), text);
  }
  return root;
}

describe("import-cycles check", () => {
  it("finds a circle of two files", () => {
    const root = tree({
      "src/a/one.ts": `import { two } from "./two.js";\nexport const one = () => two;\n`,
      "src/a/two.ts": `import { one } from "./one.js";\nexport const two = () => one;\n`,
    });
    const cycles = findImportCycles(root);
    expect(cycles.map((c) => c.chain)).toEqual([["src/a/one.ts", "src/a/two.ts", "src/a/one.ts"]]);
    expect(formatCycles(cycles)).toContain("src/a/one.ts -> src/a/two.ts -> src/a/one.ts");
  });

  it("finds a circle of three files tied by a type-only import, across folders", () => {
    const root = tree({
      "src/a/one.ts": `import { two } from "../b/two.js";\nexport interface One { n: number }\nexport const one = two;\n`,
      "src/b/two.ts": `import { three } from "./three.js";\nexport const two = three;\n`,
      "src/b/three.ts": `import type { One } from "../a/one.js";\nexport const three = (o: One) => o.n;\n`,
    });
    const cycles = findImportCycles(root);
    expect(cycles).toHaveLength(1);
    expect(cycles[0]?.files).toEqual(["src/a/one.ts", "src/b/three.ts", "src/b/two.ts"]);
    expect(cycles[0]?.chain).toEqual(["src/a/one.ts", "src/b/two.ts", "src/b/three.ts", "src/a/one.ts"]);
  });

  it("finds a circle through `export * from` and an index file", () => {
    const root = tree({
      "src/a/index.ts": `export * from "./impl.js";\n`,
      "src/a/impl.ts": `import { other } from "./other.js";\nexport const impl = () => other;\n`,
      "src/a/other.ts": `export { impl as other } from "../a";\n`,
    });
    const cycles = findImportCycles(root);
    expect(cycles).toHaveLength(1);
    expect(cycles[0]?.files).toEqual(["src/a/impl.ts", "src/a/index.ts", "src/a/other.ts"]);
  });

  it("finds a circle through a dynamic import() in daemon/, shim/ and scripts/ too", () => {
    const root = tree({
      "daemon/x.ts": `export const x = () => import("../shim/y.js");\n`,
      "shim/y.ts": `export type Y = typeof import("../scripts/z.js");\n`,
      "scripts/z.ts": `export { x } from "../daemon/x.js";\n`,
    });
    expect(findImportCycles(root).map((c) => c.files)).toEqual([["daemon/x.ts", "scripts/z.ts", "shim/y.ts"]]);
  });

  it("finds none in a clean tree, and ignores src/gen/, packages, built-ins and specifiers in strings", () => {
    const root = tree({
      "src/a/one.ts": `import { two } from "./two.js";\nimport { join } from "node:path";\nimport { parse } from "yaml";\nexport const one = [two, join, parse];\n`,
      "src/a/two.ts": `// import { one } from "./one.js";\nexport const two = 'import { one } from "./one.js"';\n`,
      "src/gen/g1.ts": `import { g2 } from "./g2.js";\nexport const g1 = g2;\n`,
      "src/gen/g2.ts": `import { g1 } from "./g1.js";\nexport const g2 = g1;\n`,
    });
    expect(findImportCycles(root)).toEqual([]);
  });

  it("finds no circle in this tree", () => {
    const cycles = findImportCycles(ROOT);
    expect(formatCycles(cycles)).toBe("");
  });
});
