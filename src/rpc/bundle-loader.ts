import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, resolve } from "node:path";
import { Script } from "node:vm";
import { lineSourceMap, type LineSourceMap, type SourceMapPayload } from "./source-map-lines.js";

/**
 * Load a CommonJS bundle (scripts/build-shim.ts) with V8's code cache beside it (issue 26).
 *
 * `require` compiles a bundle's text on every start: for the CLI's client bundle (then grpc-js,
 * protobuf-es, the generated messages: ~1.2 MB; ~0.4 MB since the client is src/rpc/client.ts
 * over its own HTTP/2) that was ~35 ms of `teamd status`. V8 can
 * instead deserialize the code it compiled on an earlier run: `BUNDLE.v8cache`, written by the
 * build (`writeBundleCache`, in a fresh node after the bundle ran once). V8 checks the cache
 * against the source's hash, its own version and its flags, and rejects one that does not
 * match (another node, other flags, a rebuilt bundle): the bundle is then compiled as before.
 *
 * SECURITY: a code cache is code. It is only ever read from beside the bundle, a file the
 * build wrote where the program itself is installed, never from anywhere a seat or the program
 * at run time writes: nothing here writes a cache at run time. A seat must never be able to
 * write code that another run (or seat) executes; that would be a sandbox escape.
 */
export const CODE_CACHE_SUFFIX = ".v8cache";

/** The wrapper Node's own CommonJS loader puts around a module: the bundle sees the same five names. */
const wrap = (source: string) => `(function (exports, require, module, __filename, __dirname) { ${source.replace(/^#!.*/, "")}\n});`;

function compile(file: string, cachedData: Buffer | undefined): Script {
  return new Script(wrap(readFileSync(file, "utf8")), { filename: file, ...(cachedData === undefined ? {} : { cachedData }) });
}

function run(script: Script, file: string): unknown {
  const module = { exports: {} as unknown, filename: file, id: file, loaded: false };
  const fn = script.runInThisContext() as (e: unknown, r: NodeRequire, m: typeof module, f: string, d: string) => void;
  fn.call(module.exports, module.exports, createRequire(file), module, file, dirname(file));
  module.loaded = true;
  return module.exports;
}

function readCache(file: string): Buffer | undefined {
  try {
    return readFileSync(`${file}${CODE_CACHE_SUFFIX}`);
  } catch {
    return undefined; // no cache (not built, or removed): compiled as require would
  }
}

/**
 * The bundle's exports, as `require(file)` would give them. Its stack frames are mapped back to
 * the source through `file.map` when a stack is formatted (`mapStacks`), not at every start.
 */
export function loadBundle(file: string): unknown {
  const script = compile(file, readCache(file));
  mapStacks(file);
  return run(script, file);
}

/**
 * The build's half: run the bundle once in this (fresh) process — and its `warm`, where it exports
 * one (the owner bundle: every command's module evaluated, so their code is in the cache too) —
 * then write what V8 compiled.
 */
export function writeBundleCache(file: string): string {
  const script = compile(file, undefined);
  const exported = run(script, file) as { warm?: unknown };
  if (typeof exported.warm === "function") (exported.warm as () => unknown)();
  return writeCache(script, file);
}

/**
 * writeBundleCache, with `call` run on the bundle's exports before the cache is written: the
 * build's warm call (scripts/build-shim.ts), whose functions are then in the cache too, not
 * compiled at every start (V8 caches only what was compiled while the bundle ran).
 */
export async function writeBundleCacheAfter(file: string, call: (exported: unknown) => Promise<void>): Promise<string> {
  const script = compile(file, undefined);
  await call(run(script, file));
  return writeCache(script, file);
}

function writeCache(script: Script, file: string): string {
  const out = `${file}${CODE_CACHE_SUFFIX}`;
  const temp = `${out}.${process.pid}.tmp`;
  writeFileSync(temp, script.createCachedData(), { mode: 0o644 });
  renameSync(temp, out);
  return out;
}

/**
 * Stack traces name the source (daemon/commands/seat.ts:219), as `--enable-source-maps` would
 * make them, but the map (~650 KB) is read only when a stack that passes through the bundle is
 * formatted: Node's own source-map support reads and indexes it at every start (~25 ms). It is
 * held line-indexed (source-map-lines.ts), not decoded whole: the daemon formats stacks in its
 * ordinary work, and Node's SourceMap of its bundle's map held ~54 MB from then on.
 */
function mapStacks(file: string): void {
  let map: LineSourceMap | null | undefined;
  const sourceMap = () => {
    if (map !== undefined) return map;
    try {
      map = lineSourceMap(JSON.parse(readFileSync(`${file}.map`, "utf8")) as SourceMapPayload);
    } catch {
      map = null;
    }
    return map;
  };
  const previous = Error.prepareStackTrace;
  Error.prepareStackTrace = (error, frames) => {
    if (!frames.some((f) => f.getFileName() === file)) {
      return previous ? previous(error, frames) : `${headline(error)}${frames.map((f) => `\n    at ${f.toString()}`).join("")}`;
    }
    return `${headline(error)}${frames.map((f) => `\n    at ${mapped(f, file, sourceMap())}`).join("")}`;
  };
}

function headline(error: Error): string {
  let text: string;
  try {
    text = Error.prototype.toString.call(error);
  } catch {
    text = "<error>";
  }
  return text;
}

function mapped(frame: NodeJS.CallSite, file: string, map: LineSourceMap | null): string {
  const line = frame.getLineNumber();
  const column = frame.getColumnNumber();
  if (map === null || frame.getFileName() !== file || line === null || column === null) return frame.toString();
  const entry = map.findEntry(line - 1, column - 1);
  if (entry.originalSource === undefined || entry.originalLine === undefined || entry.originalColumn === undefined) return frame.toString();
  const source = resolve(dirname(file), entry.originalSource.replace(/^file:\/\//, ""));
  const where = `${source}:${entry.originalLine + 1}:${entry.originalColumn + 1}`;
  const name = frame.getFunctionName() ?? entry.name;
  const prefix = frame.isAsync() ? "async " : frame.isConstructor() ? "new " : "";
  return name ? `${prefix}${name} (${where})` : `${prefix}${where}`;
}
