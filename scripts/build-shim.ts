import { build } from "esbuild";
import { chmod, mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

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

export async function buildShim(root: string): Promise<string> {
  await bundle(root, "shim/egress.ts", EGRESS_BUNDLE_RELATIVE, "esm");
  return bundle(root, "shim/main.ts", SHIM_BUNDLE_RELATIVE, "cjs");
}

async function bundle(root: string, entry: string, relative: string, format: "esm" | "cjs"): Promise<string> {
  const outfile = join(root, relative);
  const temp = `${outfile}.${process.pid}.tmp`;
  await mkdir(dirname(outfile), { recursive: true });
  await build({
    entryPoints: [join(root, entry)],
    outfile: temp,
    bundle: true,
    platform: "node",
    target: "node20",
    format,
    // An ES module bundle holds CommonJS packages (commander): give it a require for their node: imports.
    ...(format === "esm"
      ? { banner: { js: 'import { createRequire as __teamdCreateRequire } from "node:module"; const require = __teamdCreateRequire(import.meta.url);' } }
      : {}),
    legalComments: "none",
    logLevel: "warning",
  });
  // The entry's hashbang must be the file's first line for the kernel to run it.
  const text = await readFile(temp, "utf8");
  await writeFile(temp, `#!/usr/bin/env node\n${text.replace(/^#!.*\n/, "")}`);
  await chmod(temp, 0o755);
  await rename(temp, outfile);
  return outfile;
}

const invoked = process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (invoked) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
  const out = await buildShim(root);
  process.stdout.write(`build-shim: ${out}\n`);
}
