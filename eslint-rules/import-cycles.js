// No import circles anywhere (issue 19). A circle means two files that cannot be read,
// tested or moved apart, and one whose loading order decides whether a value is there yet.
// ESLint sees one file at a time, so this is a whole-tree check that `npm run lint` runs
// after eslint: it reads every .ts file under daemon/, src/ (not src/gen/), shim/ and
// scripts/, takes each relative specifier of an import, an `export ... from` and an
// import() — type-only imports included, because a `type` import still ties the two files
// together — finds the strongly connected components (Tarjan) and prints each circle as a
// chain of repo-relative paths. Exit status 1 if there is any.
//
// Test: test/lint/import-cycles.test.ts runs findImportCycles on fixture trees and on this one.
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

/** The folders this project's programs and libraries live in, and what is not ours to untie. */
export const ROOTS = ["daemon", "src", "shim", "scripts"];
export const EXCLUDE = ["src/gen"];

/** @param {string} p */
const posix = (p) => p.split(path.sep).join("/");

/**
 * Every .ts file under the roots, as repo-relative posix paths, sorted.
 * @param {string} root @param {readonly string[]} roots @param {readonly string[]} exclude
 */
function listFiles(root, roots, exclude) {
  /** @type {string[]} */
  const out = [];
  /** @param {string} rel */
  const walk = (rel) => {
    if (exclude.some((e) => rel === e || rel.startsWith(e + "/"))) return;
    const abs = path.join(root, rel);
    if (!existsSync(abs)) return;
    if (statSync(abs).isDirectory()) {
      for (const name of readdirSync(abs).sort()) {
        if (name === "node_modules" || name.startsWith(".")) continue;
        walk(rel === "" ? name : `${rel}/${name}`);
      }
    } else if (rel.endsWith(".ts")) {
      out.push(rel);
    }
  };
  for (const r of roots) walk(posix(r));
  return out.sort();
}

/**
 * The file a relative specifier names, if it is one of ours: NodeNext writes `./x.js` for
 * `./x.ts`; an extensionless or folder specifier is tried as `.ts` and `index.ts`.
 * @param {string} fromRel @param {string} spec @param {ReadonlySet<string>} known
 * @returns {string | undefined}
 */
function resolveSpecifier(fromRel, spec, known) {
  if (!spec.startsWith("./") && !spec.startsWith("../") && spec !== "." && spec !== "..") return undefined;
  const base = path.posix.normalize(path.posix.join(path.posix.dirname(fromRel), spec));
  const candidates = [];
  if (/\.(c|m)?js$/.test(base)) candidates.push(base.replace(/\.(c|m)?js$/, (ext) => ext.replace("js", "ts")));
  candidates.push(base, `${base}.ts`, `${base}/index.ts`);
  return candidates.find((c) => known.has(c));
}

/**
 * The import graph: for each file, the files of ours it imports (static, type-only,
 * re-export, dynamic import(), require()), deduplicated and sorted.
 * @param {string} root @param {readonly string[]} files
 * @returns {Map<string, string[]>}
 */
export function importGraph(root, files) {
  const known = new Set(files);
  /** @type {Map<string, string[]>} */
  const graph = new Map();
  for (const file of files) {
    const text = readFileSync(path.join(root, file), "utf8");
    // preProcessFile scans tokens, so a specifier-like string inside a comment or a string
    // literal is not taken; `import type`, `export * from` and import() all are.
    const info = ts.preProcessFile(text, true, true);
    const targets = new Set();
    for (const ref of info.importedFiles) {
      const target = resolveSpecifier(file, ref.fileName, known);
      if (target !== undefined) targets.add(target);
    }
    graph.set(file, [...targets].sort());
  }
  return graph;
}

/**
 * Tarjan's strongly connected components, iteratively (no recursion limit on a deep tree).
 * @param {ReadonlyMap<string, readonly string[]>} graph @returns {string[][]}
 */
function stronglyConnected(graph) {
  let next = 0;
  /** @type {Map<string, number>} */ const index = new Map();
  /** @type {Map<string, number>} */ const low = new Map();
  /** @type {Set<string>} */ const onStack = new Set();
  /** @type {string[]} */ const stack = [];
  /** @type {string[][]} */ const components = [];
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    /** @type {Array<{ node: string, edge: number }>} */
    const work = [{ node: start, edge: 0 }];
    index.set(start, next);
    low.set(start, next);
    next++;
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = /** @type {{ node: string, edge: number }} */ (work[work.length - 1]);
      const edges = graph.get(frame.node) ?? [];
      if (frame.edge < edges.length) {
        const to = /** @type {string} */ (edges[frame.edge++]);
        if (!index.has(to)) {
          index.set(to, next);
          low.set(to, next);
          next++;
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, edge: 0 });
        } else if (onStack.has(to)) {
          low.set(frame.node, Math.min(/** @type {number} */ (low.get(frame.node)), /** @type {number} */ (index.get(to))));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(/** @type {number} */ (low.get(parent.node)), /** @type {number} */ (low.get(frame.node))));
      if (low.get(frame.node) === index.get(frame.node)) {
        /** @type {string[]} */ const component = [];
        let member;
        do {
          member = /** @type {string} */ (stack.pop());
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        components.push(component.sort());
      }
    }
  }
  return components;
}

/**
 * One shortest way round a circle, from its first file back to it, through its members only.
 * @param {ReadonlyMap<string, readonly string[]>} graph @param {readonly string[]} members
 * @returns {string[]} the chain, first file repeated at the end
 */
function shortestCircle(graph, members) {
  const inside = new Set(members);
  const start = /** @type {string} */ (members[0]);
  /** @type {Map<string, string>} */ const cameFrom = new Map();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const at = /** @type {string} */ (queue[i]);
    for (const to of graph.get(at) ?? []) {
      if (!inside.has(to)) continue;
      if (to === start) {
        /** @type {string[]} */ const way = [];
        for (let back = at; back !== start; back = /** @type {string} */ (cameFrom.get(back))) way.unshift(back);
        return [start, ...way, start];
      }
      if (!cameFrom.has(to)) {
        cameFrom.set(to, at);
        queue.push(to);
      }
    }
  }
  return [start, start];
}

/**
 * @typedef {object} ImportCycle
 * @property {string[]} files   every file of the circle (a strongly connected component), sorted
 * @property {string[]} chain   one shortest way round it: files[0] -> ... -> files[0]
 * @property {Array<[string, string]>} edges  the imports inside it, [from, to]: the ones to untie
 */

/**
 * The import circles among the .ts files under `roots` (repo-relative folders of `root`).
 * @param {string} root
 * @param {{ roots?: readonly string[], exclude?: readonly string[] }} [options]
 * @returns {ImportCycle[]}
 */
export function findImportCycles(root, options = {}) {
  const files = listFiles(root, options.roots ?? ROOTS, options.exclude ?? EXCLUDE);
  const graph = importGraph(root, files);
  const cycles = [];
  for (const files of stronglyConnected(graph)) {
    const only = /** @type {string} */ (files[0]);
    if (files.length === 1 && !(graph.get(only) ?? []).includes(only)) continue;
    const inside = new Set(files);
    /** @type {Array<[string, string]>} */
    const edges = files.flatMap((from) => (graph.get(from) ?? []).filter((to) => inside.has(to)).map((to) => /** @type {[string, string]} */ ([from, to])));
    cycles.push({ files, chain: shortestCircle(graph, files), edges });
  }
  return cycles.sort((a, b) => (a.files[0] ?? "").localeCompare(b.files[0] ?? ""));
}

/** @param {readonly ImportCycle[]} cycles @returns {string} what a reader needs to untie each */
export function formatCycles(cycles) {
  return cycles
    .map((c) => {
      const lines = [`import circle of ${c.files.length} file(s): ${c.chain.join(" -> ")}`];
      for (const from of c.files) {
        const tos = c.edges.filter(([f]) => f === from).map(([, to]) => to);
        lines.push(`    ${from} imports ${tos.join(", ")}`);
      }
      return lines.join("\n");
    })
    .join("\n");
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
  const cycles = findImportCycles(root);
  if (cycles.length > 0) {
    console.error(formatCycles(cycles));
    console.error(`\n${cycles.length} import circle(s). Move the shared types or constants to a file both sides can import (see issue 19).`);
    process.exit(1);
  }
}
