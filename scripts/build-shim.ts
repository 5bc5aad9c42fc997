import { build, type Plugin } from "esbuild";
import { chmod, mkdir, rename, writeFile } from "node:fs/promises";
import { basename, dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { execFileSync } from "node:child_process";

/**
 * `npm run build` (after tsc): bundle shim/main.ts and everything it imports (src/rpc,
 * src/gen, grpc-js, protobuf-es, commander) into one self-contained, executable file,
 * dist/shim-bundle/teamd-shim.cjs. That one file is what a seat sees of teamd (bound
 * read-only at /run/teamd/shim, on PATH as `teamd-shim`): the daemon's own code and
 * node_modules are never bound into a seat, so the shim must need nothing beside itself.
 * Written to a temporary name and renamed, so a running daemon never copies half a file.
 *
 * CommonJS, not an ES module (issue 26): inside a seat the file has no extension and no
 * package.json above it, so Node reads it as CommonJS first — an ES module bundle was parsed
 * twice (as a script, which fails, then as a module) and started through the module loader; a
 * CommonJS one is parsed once. esbuild keeps each module the entry imports lazily (the command
 * tree, the acts, the remote helper) behind an init function, so a command evaluates only its own.
 */
export const SHIM_BUNDLE_RELATIVE = "dist/shim-bundle/teamd-shim.cjs";
/**
 * The seat's egress launcher and proxy (shim/egress.ts) is a second, small bundle: it runs
 * before every command of a seat that declares egress, so it must not load gRPC (the main
 * bundle costs ~100 ms more to start).
 */
export const EGRESS_BUNDLE_RELATIVE = "dist/shim-bundle/teamd-egress.mjs";

/**
 * The owner's CLI's front (issue 26): daemon/main.ts, the command tree (daemon/cli.ts), commander
 * and the few leaf modules they import, in one CommonJS file — `teamd --version`, `--help` and a
 * usage error read one file instead of a dozen modules and commander's files through the module
 * loader (~52 -> ~37 ms against node -e 0's ~27 ms, host, clean env, 41 interleaved runs). Each
 * command's own module stays where tsc put it and is imported from there when the command runs
 * (the bundle's import() names it relative to dist/bin/), so a command's stack trace names its
 * file as before. The front's own lines map back through teamd.cjs.map under
 * `node --enable-source-maps` (not on by default: reading the map cost ~10 ms of every start).
 * package.json's bin runs it; dist/daemon/main.js, unbundled, runs the same program.
 */
export const CLI_BUNDLE_RELATIVE = "dist/bin/teamd.cjs";

/**
 * `teamd status` and the seat commands (daemon/client-commands.ts), the CLI's front imports from
 * one more CommonJS file: each is a client of the daemon, and gRPC, protobuf-es and the generated
 * messages are ~100 modules through the module loader (status ~225 -> ~125 ms, exec ~247 -> ~180 ms,
 * host, clean env, 21 interleaved runs). The front loads it through src/rpc/bundle-loader.ts: with
 * V8's code cache the build writes beside it (teamd-client.cjs.v8cache), and with its stack frames
 * mapped to their source (daemon/commands/seat.ts:219) only when a stack is formatted — Node's own
 * source maps read and indexed the 650 KB map at every start (~25 ms of `teamd status`). Native and lazily required packages stay in node_modules;
 * import.meta.url is the bundle's own (dist/bin/, which seat-layout.ts's teamdCodeRoot reads as
 * the package root, as from dist/daemon/host/).
 */
export const CLIENT_BUNDLE_RELATIVE = "dist/bin/teamd-client.cjs";

export async function buildShim(root: string): Promise<string> {
  await bundle(root, "shim/egress.ts", EGRESS_BUNDLE_RELATIVE, "esm");
  await bundle(root, "daemon/client-commands.ts", CLIENT_BUNDLE_RELATIVE, "cjs", {
    external: ["better-sqlite3", "node-pty", "@xterm/headless"],
    define: { "import.meta.url": "__teamdImportMetaUrl" },
    // Strict first: a directive after the banner would no longer be one.
    banner: '"use strict";\nconst __teamdImportMetaUrl = require("node:url").pathToFileURL(__filename).href;',
    sourcemap: true,
  });
  writeCodeCache(join(root, CLIENT_BUNDLE_RELATIVE));
  await bundle(root, "daemon/main.ts", CLI_BUNDLE_RELATIVE, "cjs", {
    plugins: [commandsFromDist(root, CLI_BUNDLE_RELATIVE), lazyChildProcess],
    sourcemap: true,
  });
  return bundle(root, "shim/main.ts", SHIM_BUNDLE_RELATIVE, "cjs");
}

/**
 * V8's code cache for a CommonJS bundle (src/rpc/bundle-loader.ts), written beside it by a fresh
 * node — this one, with no flags, as the program runs — after the bundle ran once, so it holds
 * what its start compiled: `teamd status` ~35 ms less of compiling on the 2-core machine.
 * It is written here, at build time, into the program's own directory, and nothing writes
 * one at run time (a cache is code: see the loader).
 */
function writeCodeCache(bundleFile: string): void {
  const loader = pathToFileURL(join(dirname(fileURLToPath(import.meta.url)), "..", "src", "rpc", "bundle-loader.js")).href;
  const program = `import { writeBundleCache } from ${JSON.stringify(loader)}; writeBundleCache(${JSON.stringify(bundleFile)});`;
  const { NODE_OPTIONS: _options, ...env } = process.env;
  execFileSync(process.execPath, ["--input-type=module", "-e", program], { env, stdio: ["ignore", "ignore", "inherit"] });
}

/**
 * Every import() in the CLI's front: left to run at its time, from tsc's output (dist/), named
 * relative to the bundle — but the client commands, from their own bundle beside it.
 */
function commandsFromDist(root: string, relativeOut: string): Plugin {
  return {
    name: "commands-from-dist",
    setup(b) {
      const client = `./${basename(CLIENT_BUNDLE_RELATIVE)}`;
      // Through V8's code cache the build wrote beside it (src/rpc/bundle-loader.ts), not require.
      b.onLoad({ filter: /.*/, namespace: "teamd-client" }, () => ({
        contents: `const { loadBundle } = require(${JSON.stringify(join(root, "src", "rpc", "bundle-loader.ts"))});\nmodule.exports = loadBundle(require("node:path").join(__dirname, ${JSON.stringify(client)}));`,
        loader: "js",
        resolveDir: root,
      }));
      b.onResolve({ filter: /.*/ }, (args) => {
        if (args.kind !== "dynamic-import") return undefined;
        // A require, not an import(): Node's import() of a CommonJS file lexes all of it for its export names first.
        if (join(args.resolveDir, args.path) === join(root, "daemon", "client-commands.js")) return { path: "client-commands", namespace: "teamd-client" };
        const compiled = join(root, "dist", relative(root, join(args.resolveDir, args.path)));
        const path = relative(dirname(join(root, relativeOut)), compiled)
          .split(sep)
          .join("/");
        return { path: path.startsWith(".") ? path : `./${path}`, external: true };
      });
    },
  };
}

async function bundle(
  root: string,
  entry: string,
  relativeOut: string,
  format: "esm" | "cjs",
  options: { plugins?: Plugin[]; sourcemap?: boolean; external?: string[]; define?: Record<string, string>; banner?: string } = {},
): Promise<string> {
  const outfile = join(root, relativeOut);
  const temp = `${outfile}.${process.pid}.tmp`;
  await mkdir(dirname(outfile), { recursive: true });
  const result = await build({
    entryPoints: [join(root, entry)],
    outfile: temp,
    write: false,
    bundle: true,
    platform: "node",
    target: "node20",
    format,
    // An ES module bundle holds CommonJS packages (commander): give it a require for their node: imports.
    ...(format === "esm"
      ? { banner: { js: 'import { createRequire as __teamdCreateRequire } from "node:module"; const require = __teamdCreateRequire(import.meta.url);' } }
      : options.banner !== undefined
        ? { banner: { js: options.banner } }
        : {}),
    external: options.external ?? [],
    define: options.define ?? {},
    ...(options.sourcemap ? { sourcemap: "external" as const, sourcesContent: false } : {}),
    plugins: options.plugins ?? [],
    legalComments: "none",
    logLevel: "warning",
  });
  const code = result.outputFiles.find((file) => file.path === temp);
  const map = result.outputFiles.find((file) => file.path === `${temp}.map`);
  if (code === undefined) throw new Error(`esbuild wrote no ${temp}`);
  // The entry's hashbang must be the file's first line for the kernel to run it.
  const mapLine = map === undefined ? "" : `//# sourceMappingURL=${basename(outfile)}.map\n`;
  await writeFile(temp, `#!/usr/bin/env node\n${code.text.replace(/^#!.*\n/, "")}${mapLine}`);
  await chmod(temp, 0o755);
  if (map !== undefined) {
    await writeFile(`${temp}.map`, map.text);
    await rename(`${temp}.map`, `${outfile}.map`);
  }
  await rename(temp, outfile);
  return outfile;
}

/**
 * commander requires node:child_process when it loads, for executable subcommands (a command
 * whose action is another program), which `teamd` has none of; with it came node:net and the
 * streams, ~9 ms of the ~34 of `teamd --help` in a CPU profile. In the CLI's front, commander's
 * require gets a stand-in that loads the real module the first time spawn is called.
 */
const lazyChildProcess: Plugin = {
  name: "lazy-child-process",
  setup(b) {
    b.onResolve({ filter: /^(node:)?child_process$/ }, (args) =>
      /[\\/]node_modules[\\/]commander[\\/]/.test(args.importer) ? { path: "child_process", namespace: "teamd-lazy" } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: "teamd-lazy" }, () => ({
      contents: 'module.exports = { spawn: (...args) => require("node:child_process").spawn(...args) };',
      loader: "js",
    }));
  },
};

const invoked = process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (invoked) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
  const out = await buildShim(root);
  process.stdout.write(`build-shim: ${out}\n`);
}
