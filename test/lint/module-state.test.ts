import { describe, expect, it } from "vitest";
import { ESLint } from "eslint";
import { join } from "node:path";
import { ROOT } from "../support/programs.js";

/**
 * Wall 9 (eslint-rules/module-state.js): no mutable module-level state in src/ and daemon/.
 * Each case lints source text as if it lived at the given path, through the project's real
 * eslint.config.js, and looks only at this rule's findings.
 */
const eslint = new ESLint({ cwd: ROOT });

async function problems(code: string, file: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(ROOT, file) });
  return (result?.messages ?? []).filter((m) => m.ruleId === "teamd/module-state" || m.ruleId === null).map((m) => `${m.ruleId}: ${m.message}`);
}

const violations: Array<[string, string, RegExp]> = [
  ["a top-level let", `let count = 0;\nexport const next = () => ++count;`, /top-level `let count`/],
  ["a top-level var", `var seen: string | undefined;\nexport const see = (s: string) => (seen = s);`, /top-level `var seen`/],
  ["an exported let", `export let current = "";`, /top-level `let current`/],
  ["a let never assigned again", `let fixed = 1;\nexport const f = () => fixed;`, /top-level `let fixed`/],
  [
    "a Map written in a function",
    `const cache = new Map<string, number>();\nexport const put = (k: string) => cache.set(k, 1);`,
    /writes to its top-level Map 'cache' \(\.set/,
  ],
  ["a Set added to at load", `const names = new Set<string>();\nnames.add("a");\nexport const has = (n: string) => names.has(n);`, /Set 'names' \(\.add/],
  [
    "a WeakMap memo",
    `const memo = new WeakMap<object, number>();\nexport const of = (o: object) => { memo.set(o, 1); return memo.get(o); };`,
    /WeakMap 'memo' \(\.set/,
  ],
  ["a WeakSet", `const marked = new WeakSet<object>();\nexport const mark = (o: object) => void marked.add(o);`, /WeakSet 'marked' \(\.add/],
  ["a delete", `const live = new Map<string, number>([["a", 1]]);\nexport const drop = (k: string) => live.delete(k);`, /Map 'live' \(\.delete/],
  ["a clear", `const live = new Set<string>(["a"]);\nexport const reset = () => live.clear();`, /Set 'live' \(\.clear/],
  ["a computed write", `const m = new Map<string, number>();\nexport const put = (k: string) => m["set"](k, 1);`, /Map 'm' \(\.set/],
  ["a typed collection", `const m = new Map() as Map<string, number>;\nexport const put = (k: string) => m.set(k, 1);`, /Map 'm' \(\.set/],
  [
    "a collection written through a helper of the module",
    `const stores = new WeakMap<object, number>();\nfunction level(map: WeakMap<object, number>, key: object) { map.set(key, 1); }\nexport const f = (o: object) => level(stores, o);`,
    /WeakMap 'stores' \(\.set/,
  ],
];

describe("module-state lint rule (wall 9)", () => {
  it.each(violations)("refuses %s in src/", async (_name, code, expected) => {
    expect((await problems(code, "src/ledger/violation.ts")).join("\n")).toMatch(expected);
  });

  it("refuses it in daemon/ and in the kernel too", async () => {
    for (const file of ["daemon/server/violation.ts", "daemon/commands/violation.ts", "src/kernel/violation.ts"]) {
      expect((await problems(`let state = 0;\nexport const s = () => state;`, file)).join("\n")).toMatch(/module-state/);
    }
  });

  it("stays quiet on frozen constant tables and read-only lookups", async () => {
    const code = [
      `const TABLE = Object.freeze({ a: 1, b: 2 });`,
      `const NAMES: ReadonlySet<string> = new Set(["a", "b"]);`,
      `const BY_NAME = new Map([["a", 1]]);`,
      `export const lookup = (n: string) => (NAMES.has(n) ? (BY_NAME.get(n) ?? TABLE.a) : TABLE.b);`,
    ].join("\n");
    expect(await problems(code, "src/ledger/clean.ts")).toEqual([]);
  });

  it("stays quiet on state a factory owns, and on loop variables", async () => {
    const code = [
      `export function createCounter() {`,
      `  let count = 0;`,
      `  const seen = new Map<string, number>();`,
      `  return { next: (k: string) => { seen.set(k, ++count); return count; } };`,
      `}`,
      `const TOTALS: number[] = [];`,
      `for (let i = 0; i < 3; i++) TOTALS.push(i);`,
      `export const totals = () => TOTALS;`,
      `export const other = (m: Map<string, number>) => m.set("a", 1);`,
    ].join("\n");
    expect(await problems(code, "daemon/server/clean.ts")).toEqual([]);
  });

  it("lets a memo keyed by frozen inputs stay with its reason written beside it", async () => {
    const code = [
      `// eslint-disable-next-line teamd/module-state -- keyed by a frozen list: the index follows from the key alone`,
      `const index = new WeakMap<readonly string[], ReadonlySet<string>>();`,
      `export const setOf = (list: readonly string[]) => { let s = index.get(list); if (!s) index.set(list, (s = new Set(list))); return s; };`,
    ].join("\n");
    expect(await problems(code, "src/kernel/memo.ts")).toEqual([]);
  });

  it("does not apply outside src/ and daemon/", async () => {
    expect(await problems(`let state = 0;\nexport const s = () => state;`, "test/ledger/outside.ts")).toEqual([]);
    expect(await problems(`let state = 0;\nexport const s = () => state;`, "scripts/outside.ts")).toEqual([]);
  });
});
