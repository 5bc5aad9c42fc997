import { build, type Plugin } from "esbuild";
import { chmod, mkdir, rename, writeFile } from "node:fs/promises";
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { create, toBinary } from "@bufbuild/protobuf";
import { ListRefsResponseSchema, PushResponseSchema } from "../src/gen/teamd/v1/shim_pb.js";
import { WhoAmIResponseSchema } from "../src/gen/teamd/v1/whoami_pb.js";
import { ExecResponseSchema, StatusResponseSchema } from "../src/gen/teamd/v1/control_pb.js";
import { PROTOCOL_VERSION, TEAMD_VERSION } from "../src/rpc/protocol.js";
import { COMMAND_NAMES_FILE, HELP_TEXT_FILE, SUGGEST_FILE } from "../daemon/help-text.js";
import { tmpdir } from "node:os";
import { LINUX_BASE, SHIM_GIT_REMOTE_SUFFIX, SHIM_LAZY_SUFFIX } from "../src/sandbox/linux-base.js";
import { basename, dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { decodedDescriptors } from "./decoded-descriptors.js";
import { sentCalls } from "../src/rpc/client.js";
import { pushCalls } from "../shim/first-calls.js";
import { whoAmICalls } from "../shim/whoami-service.js";

/**
 * `npm run build` (after tsc): bundle shim/main.ts and everything it imports (src/rpc's client,
 * src/gen, protobuf-es, commander; not grpc-js, which only the daemon loads) into one
 * self-contained, executable file, dist/shim-bundle/teamd-shim.cjs, and its lazy part beside it
 * (teamd-shim.cjs.lazy). Those two files are what a seat sees of teamd (bound read-only at
 * /run/teamd/shim and /run/teamd/shim.lazy, on PATH as `teamd-shim`): the daemon's own code and
 * node_modules are never bound into a seat, so the shim must need nothing beside them.
 * Written to a temporary name and renamed, so a running daemon never copies half a file.
 *
 * CommonJS, not an ES module (issue 26): inside a seat the file has no extension and no
 * package.json above it, so Node reads it as CommonJS first — an ES module bundle was parsed
 * twice (as a script, which fails, then as a module) and started through the module loader; a
 * CommonJS one is parsed once. esbuild keeps each module the entry imports lazily (the command
 * tree, the acts, the remote helper) behind an init function, so a command evaluates only its own.
 * Those lazy modules are held in a second file beside it, with V8's code cache for them
 * (buildSeatShim, below), so `--version` neither reads, compiles nor pre-parses them.
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
 * The command tree (daemon/cli.ts and commander), which the front imports for anything but its
 * two straight acts (`teamd status`, `teamd exec SEAT -- CMD`): a CommonJS file of its own, loaded
 * as the client bundle is (V8's code cache beside it, stack frames mapped to their source when a
 * stack is formatted). In the front it was ~200 KB compiled on every start, the two acts' too
 * (~2.4 ms of `teamd exec`'s CPU on the 2-core machine, issue 26).
 */
export const TREE_BUNDLE_RELATIVE = "dist/bin/teamd-tree.cjs";

/**
 * `teamd status` and the seat commands (daemon/client-commands.ts), the CLI's front imports from
 * one more CommonJS file: each is a client of the daemon, and its gRPC client, protobuf-es and the
 * generated messages were ~100 modules through the module loader (status ~225 -> ~125 ms, exec
 * ~247 -> ~180 ms, host, clean env, 21 interleaved runs, when the client was still grpc-js). The front loads it through src/rpc/bundle-loader.ts: with
 * V8's code cache the build writes beside it (teamd-client.cjs.v8cache), and with its stack frames
 * mapped to their source (daemon/commands/seat.ts:219) only when a stack is formatted — Node's own
 * source maps read and indexed the 650 KB map at every start (~25 ms of `teamd status`). Native and lazily required packages stay in node_modules;
 * import.meta.url is the bundle's own (dist/bin/, which seat-layout.ts's teamdCodeRoot reads as
 * the package root, as from dist/daemon/host/).
 */
export const CLIENT_BUNDLE_RELATIVE = "dist/bin/teamd-client.cjs";

/**
 * The rest of the owner's commands (daemon/commands/*: init, apply, log, create-bounds, lease,
 * stop --team, ...), every one the CLI's front imports, in a third CommonJS file, loaded as the
 * client bundle is (V8's code cache beside it, stack frames mapped to their source when a stack
 * is formatted). Through the module loader each read a few hundred of dist/'s modules and
 * protobuf-es's: `teamd create-bounds set` spent ~0.4 s of CPU before its act, `teamd log --json`
 * ~0.3 s. Each command's module is still evaluated only when it runs (the entry holds each behind
 * a function); the build runs them all once for the cache. The daemon (`teamd serve`) is not in
 * it: it has a bundle of its own (DAEMON_BUNDLE_RELATIVE).
 */
export const OWNER_BUNDLE_RELATIVE = "dist/bin/teamd-owner.cjs";

/**
 * The daemon (`teamd serve`, daemon/server/serve.ts and everything it imports but the native
 * packages) in a fourth CommonJS file, loaded as the client and owner bundles are (V8's code
 * cache beside it, stack frames mapped to their source when a stack is formatted). From tsc's
 * output the daemon read ~500 modules through the module loader: ready ~730 ms after its start,
 * with ~0.8 s of CPU and 83 MB resident; bundled, ~320 ms, ~0.3 s and 66 MB (2-core machine,
 * three starts each). Every process the daemon starts pays for its size: Node forks the whole
 * daemon to spawn one (~5 ms at 41 MB, ~12 ms at 141 MB here), and a push starts six.
 */
export const DAEMON_BUNDLE_RELATIVE = "dist/bin/teamd-daemon.cjs";

/** What the client, owner and daemon bundles share: native and lazily required packages stay in node_modules; import.meta.url is the bundle's own. */
const COMMAND_BUNDLE = {
  external: ["better-sqlite3", "node-pty", "@xterm/headless"],
  define: { "import.meta.url": "__teamdImportMetaUrl" },
  // Strict first: a directive after the banner would no longer be one.
  banner: '"use strict";\nconst __teamdImportMetaUrl = require("node:url").pathToFileURL(__filename).href;',
  sourcemap: true,
} as const;

export async function buildShim(root: string): Promise<string> {
  await bundle(root, "shim/egress.ts", EGRESS_BUNDLE_RELATIVE, "esm");
  await bundle(root, "daemon/client-commands.ts", CLIENT_BUNDLE_RELATIVE, "cjs", { ...COMMAND_BUNDLE, plugins: [decodedDescriptors(root)] });
  await writeClientCodeCache(join(root, CLIENT_BUNDLE_RELATIVE));
  const ownerCommands = new Set<string>();
  await bundle(root, "daemon/main.ts", CLI_BUNDLE_RELATIVE, "cjs", {
    plugins: [commandsFromDist(root, CLI_BUNDLE_RELATIVE, ownerCommands)],
    sourcemap: true,
    // import.meta.url is the front's own (dist/bin/), where the build puts the help text beside it.
    define: COMMAND_BUNDLE.define,
    banner: COMMAND_BUNDLE.banner,
  });
  await bundle(root, TREE_ENTRY, TREE_BUNDLE_RELATIVE, "cjs", {
    ...COMMAND_BUNDLE,
    entryText: 'module.exports = { ...require("./cli.js"), warm: () => require("./cli.js").buildProgram() };\n',
    plugins: [commandsFromDist(root, TREE_BUNDLE_RELATIVE, ownerCommands), lazyChildProcess],
  });
  writeCodeCache(join(root, TREE_BUNDLE_RELATIVE));
  writeHelpText(root);
  await bundle(root, OWNER_ENTRY, OWNER_BUNDLE_RELATIVE, "cjs", {
    ...COMMAND_BUNDLE,
    entryText: ownerEntry([...ownerCommands].sort()),
    plugins: [decodedDescriptors(root)],
  });
  writeCodeCache(join(root, OWNER_BUNDLE_RELATIVE));
  await bundle(root, "daemon/server/serve.ts", DAEMON_BUNDLE_RELATIVE, "cjs", {
    ...COMMAND_BUNDLE,
    plugins: [decodedDescriptors(root), externalImportsRequired(COMMAND_BUNDLE.external)],
  });
  writeCodeCache(join(root, DAEMON_BUNDLE_RELATIVE));
  return buildSeatShim(root);
}

/**
 * The shim's modules that only a command (cli.ts and the acts) or the remote helper loads: the
 * gRPC client (src/rpc/client.ts, over its own HTTP/2 on node:net), protobuf-es, the generated messages, commander. Each stays lazy inside this part (esbuild keeps
 * an import() behind an init function); the cache builder runs them all once.
 */
const SHIM_LAZY_ENTRY = `export const cli = () => require("./cli.js");
export const commands = () => require("./commands.js");
export const whoami = () => require("./whoami.js");
export const gitRemote = () => require("./git-remote.js");
export const warm = () => [require("./cli.js"), require("./git-remote.js"), require("./commands.js"), require("./whoami.js"), require("./handoff.js")];
`;
const SHIM_LAZY_IMPORTS: Record<string, string> = { "cli.ts": "cli", "commands.ts": "commands", "whoami.ts": "whoami", "git-remote.ts": "gitRemote" };
/**
 * main.ts's import() of small modules the front holds itself, run only when imported: the
 * remote helper's early pack (push-pack.ts, its guess and git's ref files), which only `git
 * push` needs before the lazy part is read, and which `teamd-shim --version` never runs.
 */
const SHIM_FRONT_DEFERRED = new Set(["push-pack.ts"]);

/** How the shim compiles its lazy part, the same text at build time (for the cache) and in the seat. */
const SHIM_LAZY_WRAP = ["(function (exports, require, module, __filename, __dirname) {", "\n});"] as const;

/**
 * The shim, in two files (issue 26), bound read-only side by side in a seat:
 * - the front, /run/teamd/shim (shim/main.ts and the few modules it imports statically),
 *   compiled as Node compiles any script; `teamd-shim --version` runs only it (~40 KB);
 * - its lazy part, /run/teamd/shim.lazy: V8's code cache, then the text of everything a command
 *   or the remote helper needs. A command reads it once — the cache as it lies in the file, the
 *   text decoded — and compiles the text with the cache instead of from scratch.
 * Held in one file before, the lazy part (as comments) was read twice, once by Node's loader as
 * UTF-8 and scanned as comments, then by the front as bytes: ~6 ms of every `teamd-shim` command
 * inside a seat (whoami 46.5 -> 40.3 ms, `node -e 0` 21.5 ms, 25 interleaved runs). The front
 * knows its part's size and refuses any other file, so a front never runs another build's part.
 *
 * SECURITY: the code cache is code. It is made here, at build time, by a fresh node (the one that
 * builds, as the daemon runs it: a seat runs the host's node), written into the lazy part, which
 * the daemon installs beside the front under one digest of both and a seat binds read-only.
 * Nothing in a seat or at run time ever writes a cache or reads one from anywhere else: a seat
 * able to write code another run or seat executes would be a sandbox escape. V8 rejects a cache
 * made by another node or under other flags (the part is then compiled from its text, as
 * before), and checks it against the text's length only, not its content: what keeps the cache
 * and the text one build's is the install (both named by one digest in TEAMD_HOME/shim, which no
 * seat can reach, and bound read-only), and the front's check of the part's size.
 */
async function buildSeatShim(root: string): Promise<string> {
  const lazy = await build({
    stdin: { contents: SHIM_LAZY_ENTRY, resolveDir: join(root, "shim"), sourcefile: "shim-lazy.ts", loader: "ts" },
    write: false,
    bundle: true,
    platform: "node",
    target: "node20",
    format: "cjs",
    charset: "ascii",
    legalComments: "none",
    logLevel: "warning",
    plugins: [decodedDescriptors(root)],
  });
  const text = lazy.outputFiles[0]?.text;
  if (text === undefined) throw new Error("esbuild wrote no lazy part of the shim");
  // ASCII, so the front decodes it as latin1 (~0.4 ms less than UTF-8 for ~400 KB). esbuild's
  // ascii charset escapes every other character in code; what it leaves is in the comments it
  // keeps (inside an object literal), where an escape is as good, and means the same anywhere else.
  const lazySource = text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  const cache = lazyCodeCache(root, lazySource);
  const part = Buffer.concat([cache, Buffer.from(lazySource, "latin1")]);
  const prelude = [
    "var __teamdShimLazyExports;",
    "function __teamdShimLazy() {",
    "  if (__teamdShimLazyExports !== undefined) return __teamdShimLazyExports;",
    `  const file = __filename + ${JSON.stringify(SHIM_LAZY_SUFFIX)};`,
    "  let bytes;",
    '  try { bytes = require("node:fs").readFileSync(file); } catch (error) { bytes = error; }',
    `  if (!Buffer.isBuffer(bytes) || bytes.length !== ${part.length}) throw new Error(\`its lazy part \${file} \${Buffer.isBuffer(bytes) ? \`is another build's (\${bytes.length} bytes, not ${part.length})\` : \`cannot be read (\${bytes.code ?? bytes.message})\`}: the shim and its part come from one build; start the seat again (or run npm run build)\`);`,
    `  const source = bytes.toString("latin1", ${cache.length});`,
    `  const script = new (require("node:vm").Script)(${JSON.stringify(SHIM_LAZY_WRAP[0])} + source + ${JSON.stringify(SHIM_LAZY_WRAP[1])}, { filename: __filename, cachedData: bytes.subarray(0, ${cache.length}) });`,
    "  const lazyModule = { exports: {} };",
    "  script.runInThisContext().call(lazyModule.exports, lazyModule.exports, require, lazyModule, __filename, __dirname);",
    "  return (__teamdShimLazyExports = lazyModule.exports);",
    "}",
  ].join("\n");
  // The parts first: a front on disk always has its parts beside it.
  const partFile = join(root, `${SHIM_BUNDLE_RELATIVE}${SHIM_LAZY_SUFFIX}`);
  await mkdir(dirname(partFile), { recursive: true });
  await writeFile(`${partFile}.${process.pid}.tmp`, part);
  await rename(`${partFile}.${process.pid}.tmp`, partFile);
  // The remote helper's front (shim/git-remote-front.sh), as it is: a seat runs it with /bin/sh.
  const helperFront = join(root, `${SHIM_BUNDLE_RELATIVE}${SHIM_GIT_REMOTE_SUFFIX}`);
  await writeFile(`${helperFront}.${process.pid}.tmp`, readFileSync(join(root, "shim", "git-remote-front.sh")), { mode: 0o755 });
  await chmod(`${helperFront}.${process.pid}.tmp`, 0o755);
  await rename(`${helperFront}.${process.pid}.tmp`, helperFront);
  return bundle(root, "shim/main.ts", SHIM_BUNDLE_RELATIVE, "cjs", {
    plugins: [shimLazyPart(root)],
    banner: `"use strict";\n${prelude}`,
    // The first calls of a push and of whoami, as bytes the front writes on its socket before the lazy part loads (shim/first-calls.ts).
    define: {
      __TEAMD_PUSH_CALLS__: JSON.stringify(sentCalls(pushCalls()).toString("base64")),
      __TEAMD_WHOAMI_CALLS__: JSON.stringify(sentCalls(whoAmICalls()).toString("base64")),
    },
  });
}

/** main.ts's import() of cli.js, commands.js and git-remote.js: from the lazy part held in the same file (SHIM_FRONT_DEFERRED's: from the front). */
function shimLazyPart(root: string): Plugin {
  return {
    name: "shim-lazy-part",
    setup(b) {
      b.onResolve({ filter: /.*/ }, (args) => {
        if (args.kind !== "dynamic-import") return undefined;
        const target = relative(join(root, "shim"), join(args.resolveDir, args.path)).replace(/\.js$/, ".ts");
        if (SHIM_FRONT_DEFERRED.has(target)) return undefined;
        const name = SHIM_LAZY_IMPORTS[target];
        if (name === undefined) throw new Error(`shim: an import() the lazy part does not hold: ${args.path}`);
        return { path: name, namespace: "shim-lazy" };
      });
      b.onLoad({ filter: /.*/, namespace: "shim-lazy" }, (args) => ({
        contents: `module.exports = __teamdShimLazy().${args.path}();`,
        loader: "js",
      }));
    },
  };
}

/**
 * V8's code cache of the lazy part, from a fresh node that compiled it with the shim's
 * wrapper and ran all of it once — under the name the shim has inside a seat (/run/teamd/shim):
 * a script compiled from a cache keeps the name it was cached under, and its stack traces show it.
 */
function lazyCodeCache(root: string, source: string): Buffer {
  const dir = mkdtempSync(join(tmpdir(), "teamd-shim-cache-"));
  try {
    const file = join(dir, "lazy.cjs");
    writeFileSync(file, source);
    const program = [
      'const { readFileSync } = require("node:fs");',
      'const { Script } = require("node:vm");',
      `const script = new Script(${JSON.stringify(SHIM_LAZY_WRAP[0])} + readFileSync(${JSON.stringify(file)}, "utf8") + ${JSON.stringify(SHIM_LAZY_WRAP[1])}, { filename: ${JSON.stringify(LINUX_BASE.inside.shim)} });`,
      "const m = { exports: {} };",
      `script.runInThisContext().call(m.exports, m.exports, require, m, ${JSON.stringify(file)}, ${JSON.stringify(dir)});`,
      "m.exports.warm();",
      warmCallProgram(join(dir, "warm.sock"), "m.exports"),
      'require("node:fs").writeFileSync(process.argv[1], script.createCachedData()); process.exit(0); })();',
    ].join("\n");
    const { NODE_OPTIONS: _options, TEAMD_SOCKET: _socket, ...env } = process.env;
    const out = join(dir, "lazy.cache");
    execFileSync(process.execPath, ["-e", program, out], { cwd: root, env, stdio: ["ignore", "ignore", "inherit"] });
    return readFileSync(out);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The start of an async block (closed by the caller) in the cache builder's program that runs
 * `teamd-shim whoami` twice (text and --json) through `lazy`'s commands, then a push's calls as
 * the remote helper makes them (git-remote.ts warmPushCalls), against a loopback HTTP/2 server
 * on `socket` answering with a full WhoAmIResponse, a listing and a push's results (issue 26). V8's cache holds
 * only what was compiled while the part ran: loaded, the part compiled its modules' top levels,
 * and every function first called in a seat — the HTTP/2 client's frames and HPACK, protobuf's
 * reading and writing, the command's printing — was compiled there, at every call (~6 ms of
 * `whoami`'s CPU in a profile; whoami 52.8 against 57.5 ms and 58.2 against 65.7, `node -e 0`
 * 28-31 ms, 31 interleaved runs in a seat). Run once here, they are in the cache. Nothing of the
 * server is in the part: it is the build's. What the command printed is thrown away; a call that
 * fails fails the build (a cache that silently held less would go unseen).
 */
function warmCallProgram(socket: string, lazy: string): string {
  const reply = create(WhoAmIResponseSchema, {
    seat: "warm",
    team: "warm",
    daemonInstance: "00000000-0000-4000-8000-000000000000",
    policySeq: 1n,
    capabilities: [{ capability: "read", scope: "path: *", source: "direct" }],
    containment: "bwrap",
    reviewMode: "distinct-seat",
    reviewFloor: 1,
    lastRefusalRule: "scope.outside",
    lastRefusalReason: "warm",
  });
  const payload = toBinary(WhoAmIResponseSchema, reply);
  // A push's listing and answer, as full as a seat's (git-remote.ts warmPushCalls).
  const oid = "1".repeat(40);
  const listing = toBinary(ListRefsResponseSchema, create(ListRefsResponseSchema, { refs: [{ name: "refs/heads/main", oid }], head: "refs/heads/main" }));
  const pushed = toBinary(
    PushResponseSchema,
    create(PushResponseSchema, { results: [{ ref: "refs/heads/warm", hubRef: "refs/heads/seat/warm/warm", ok: true }] }),
  );
  return [
    "(async () => {",
    loopbackServer(
      socket,
      { "/teamd.v1.ShimService/WhoAmI": [payload], "/teamd.v1.ShimService/ListRefs": [listing], "/teamd.v1.ShimService/Push": [pushed] },
      'require("node:http2")',
    ),
    `process.env.TEAMD_SOCKET = ${JSON.stringify(socket)};`,
    "const write = process.stdout.write;",
    "process.stdout.write = () => true;",
    // The second as a seat's whoami runs: its call written by the front before the act loaded (shim/first-calls.ts).
    `const sent = Buffer.from(${JSON.stringify(sentCalls(whoAmICalls()).toString("base64"))}, "base64");`,
    `const first = require("node:net").connect(${JSON.stringify(socket)});`,
    "first.write(sent);",
    `try { await ${lazy}.whoami().whoami({}); await ${lazy}.whoami().whoami({ json: true }, { socket: first, sent }); await ${lazy}.gitRemote().warmPushCalls(${JSON.stringify(socket)}); if (unasked().length > 0) throw new Error(\`never asked: \${unasked()}\`); }`,
    "catch (error) { process.stdout.write = write; process.stderr.write(`build-shim: the warm call failed: ${error}\\n`); process.exit(1); }",
    "finally { process.stdout.write = write; }",
    "server.close();",
  ].join("\n");
}

/**
 * Program text: a loopback HTTP/2 server listening on `socket` (awaited: the text goes inside an
 * async block) that answers each method's path with its messages, gRPC-framed, and status 0;
 * any other path with an empty message. The build's warm calls (warmCallProgram,
 * writeClientCodeCache) run a client's commands against it, and fail when one of these paths was
 * never asked (`unasked()`). `http2` is how the program names node:http2.
 */
function loopbackServer(socket: string, replies: Readonly<Record<string, readonly Uint8Array[]>>, http2: string): string {
  const framed = Object.fromEntries(
    Object.entries(replies).map(([path, messages]) => [
      path,
      Buffer.concat(
        messages.map((message) => {
          // gRPC's framing: not compressed, the length big-endian, the message.
          const head = Buffer.alloc(5);
          head.writeUInt32BE(message.length, 1);
          return Buffer.concat([head, message]);
        }),
      ).toString("base64"),
    ]),
  );
  return [
    `const replies = ${JSON.stringify(framed)};`,
    "const asked = new Set();",
    // A method the calls never asked for means a warm call that no longer exercises what it was for.
    "const unasked = () => Object.keys(replies).filter((path) => !asked.has(path));",
    `const server = ${http2}.createServer();`,
    'server.on("stream", (stream, headers) => { asked.add(headers[":path"]); stream.resume(); stream.on("end", () => {',
    '  stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });',
    '  stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));',
    '  stream.end(Buffer.from(replies[headers[":path"]] ?? "AAAAAAA=", "base64")); }); });',
    `await new Promise((resolve) => server.listen(${JSON.stringify(socket)}, resolve));`,
  ].join("\n");
}

/**
 * The CLI's client bundle's code cache (writeCodeCache), made after `teamd status` (text and
 * --json) and `teamd exec SEAT -- true` ran through it against a loopback server in a home of
 * the build's own (issue 26: see warmCallProgram; status and exec compiled the HTTP/2 client,
 * protobuf's reading and their rendering at every run). A call that fails fails the build.
 */
async function writeClientCodeCache(bundleFile: string): Promise<void> {
  const status = create(StatusResponseSchema, {
    daemon: { protocol: PROTOCOL_VERSION, program: TEAMD_VERSION },
    daemonInstance: "00000000-0000-4000-8000-000000000000",
    pid: 1,
    mode: "user",
    home: "/warm",
    seats: [
      {
        seat: "warm",
        team: "warm",
        state: "running",
        initPid: 2,
        runId: "warm",
        startedAt: "2026-01-01T00:00:00Z",
        limits: "none",
        containment: "bwrap",
        cgroup: "none: warm",
        meteredBy: "cgroup",
      },
    ],
    ledger: { state: "ready", headSeq: 1n },
    teams: [{ team: "warm", repository: "/warm", hub: "/warm", policySeq: 1n, policyHash: "warm", teamFile: "in-force" }],
    noticesUnseen: 0,
    selftest: { standing: "passed", at: "2026-01-01T00:00:00Z" },
  });
  const exec = [
    create(ExecResponseSchema, { event: { case: "stdout", value: Buffer.from("warm\n") } }),
    create(ExecResponseSchema, { event: { case: "done", value: { exitCode: 0, how: "exited", seq: 1n } } }),
  ];
  const dir = mkdtempSync(join(tmpdir(), "teamd-client-cache-"));
  try {
    mkdirSync(join(dir, "run"));
    const socket = join(dir, "run", "control.sock");
    const loader = pathToFileURL(join(dirname(fileURLToPath(import.meta.url)), "..", "src", "rpc", "bundle-loader.js")).href;
    const program = [
      `import { writeBundleCacheAfter } from ${JSON.stringify(loader)};`,
      'import http2 from "node:http2";',
      loopbackServer(
        socket,
        {
          "/teamd.v1.ControlService/Status": [toBinary(StatusResponseSchema, status)],
          "/teamd.v1.ControlService/Exec": exec.map((message) => toBinary(ExecResponseSchema, message)),
        },
        "http2",
      ),
      `process.env.TEAMD_HOME = ${JSON.stringify(dir)};`,
      "const ambient = { now: () => Date.parse('2026-01-02T00:00:00Z'), newId: () => '00000000-0000-4000-8000-000000000000' };",
      "const write = process.stdout.write;",
      "const exit = process.exit;",
      // exec exits once its command's outcome is in (daemon/commands/seat.ts): here that ends the call instead.
      "const exited = new Error('exited');",
      "process.stdout.write = () => true;",
      "process.exit = () => { throw exited; };",
      "try {",
      `  await writeBundleCacheAfter(${JSON.stringify(bundleFile)}, async (m) => {`,
      "    await m.status({}, ambient);",
      "    await m.status({ json: true }, ambient);",
      "    await m.execCommand('warm@warm', ['true'], {}).catch((error) => { if (error !== exited) throw error; });",
      "    if (process.exitCode !== 0 && process.exitCode !== undefined) throw new Error(`a warm call exited ${process.exitCode}`);",
      "    if (unasked().length > 0) throw new Error(`never asked: ${unasked()}`);",
      "  });",
      "} catch (error) {",
      "  process.stdout.write = write;",
      "  process.stderr.write(`build-shim: the client's warm call failed: ${error?.stack ?? error}\\n`);",
      "  exit(1);",
      "}",
      "process.stdout.write = write;",
      "server.close();",
      "exit(0);",
    ].join("\n");
    const { NODE_OPTIONS: _options, TEAMD_HOME: _home, ...env } = process.env;
    execFileSync(process.execPath, ["--input-type=module", "-e", program], { env, stdio: ["ignore", "ignore", "inherit"] });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
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
 * `teamd --help` as the command tree prints it to a pipe, beside the front (daemon/help-text.ts),
 * which prints it for `--help` alone when its output is not a terminal (daemon/main.ts). Made by
 * running the built CLI itself, the file removed first so that the tree prints it, into a pipe,
 * with no colour variable set: the same conditions the front checks before it uses the file.
 */
function writeHelpText(root: string): void {
  const file = join(root, "dist", "bin", HELP_TEXT_FILE);
  rmSync(file, { force: true });
  const { NODE_OPTIONS: _options, FORCE_COLOR: _force, CLICOLOR_FORCE: _cliForce, ...env } = process.env;
  const text = execFileSync(process.execPath, [join(root, CLI_BUNDLE_RELATIVE), "--help"], { env, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, text, { mode: 0o644 });
  renameSync(temp, file);
  // The names commander offers for "Did you mean": each visible command's, and its alias.
  const namesFile = join(root, "dist", "bin", COMMAND_NAMES_FILE);
  rmSync(namesFile, { force: true });
  const names = execFileSync(
    process.execPath,
    [
      "-e",
      `const p = require(${JSON.stringify(join(root, TREE_BUNDLE_RELATIVE))}).buildProgram(); const n = []; ` +
        "p.createHelp().visibleCommands(p).forEach((c) => { n.push(c.name()); if (c.alias()) n.push(c.alias()); }); process.stdout.write(n.join(String.fromCharCode(10)) + String.fromCharCode(10));",
    ],
    { env, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] },
  );
  if (!names.split("\n").includes("status")) throw new Error(`build-shim: the command tree named no commands: ${names}`);
  writeFileSync(`${namesFile}.${process.pid}.tmp`, names, { mode: 0o644 });
  renameSync(`${namesFile}.${process.pid}.tmp`, namesFile);
  // commander's own suggestSimilar, beside the front, which requires it by its own path (no
  // package lookup at a typo): not a subpath commander's package exports, so read as a file.
  const suggest = join(dirname(createRequire(import.meta.url).resolve("commander")), "lib", "suggestSimilar.js");
  writeFileSync(join(root, "dist", "bin", SUGGEST_FILE), readFileSync(suggest), { mode: 0o644 });
}

/** The command tree's entry (no file of its own): cli.ts's exports, and `warm`, which builds the tree once for the cache. */
const TREE_ENTRY = "daemon/cli-tree.ts";

/** The owner bundle's entry (no file of its own: ownerEntry writes it), named for its source map. */
const OWNER_ENTRY = "daemon/owner-commands.ts";

/**
 * The owner bundle's entry: each command module the front imports behind a function of its path
 * (daemon/commands/log.js -> "commands/log"), so a command evaluates only its own; `warm`, which
 * the build's cache writer calls (src/rpc/bundle-loader.ts), evaluates them all.
 */
function ownerEntry(commands: readonly string[]): string {
  const entries = commands.map((name) => `  ${JSON.stringify(name)}: () => require(${JSON.stringify(`./${name}.js`)}),`);
  return `module.exports = {\n${entries.join("\n")}\n  warm: () => [${commands.map((name) => `require(${JSON.stringify(`./${name}.js`)})`).join(", ")}],\n};\n`;
}

/**
 * Every import() in the CLI's front: the client commands from their own bundle beside it, the
 * other commands (daemon/commands/*, each named into `ownerCommands`) from the owner bundle, the
 * daemon from its own, through V8's code cache the build wrote beside each
 * (src/rpc/bundle-loader.ts); anything else left to run at its time, from tsc's output (dist/),
 * named relative to the bundle.
 */
function commandsFromDist(root: string, relativeOut: string, ownerCommands: Set<string>): Plugin {
  return {
    name: "commands-from-dist",
    setup(b) {
      const loaded = (bundleRelative: string) =>
        `const { loadBundle } = require(${JSON.stringify(join(root, "src", "rpc", "bundle-loader.ts"))});\nmodule.exports = loadBundle(require("node:path").join(__dirname, ${JSON.stringify(`./${basename(bundleRelative)}`)}));`;
      b.onLoad({ filter: /.*/, namespace: "teamd-client" }, () => ({ contents: loaded(CLIENT_BUNDLE_RELATIVE), loader: "js", resolveDir: root }));
      b.onLoad({ filter: /.*/, namespace: "teamd-daemon" }, () => ({ contents: loaded(DAEMON_BUNDLE_RELATIVE), loader: "js", resolveDir: root }));
      b.onLoad({ filter: /.*/, namespace: "teamd-tree" }, () => ({ contents: loaded(TREE_BUNDLE_RELATIVE), loader: "js", resolveDir: root }));
      // One load of the owner bundle, whichever commands a run imports.
      b.onResolve({ filter: /^owner-bundle$/, namespace: "teamd-owner" }, () => ({ path: "owner-bundle", namespace: "teamd-owner-bundle" }));
      b.onLoad({ filter: /.*/, namespace: "teamd-owner-bundle" }, () => ({ contents: loaded(OWNER_BUNDLE_RELATIVE), loader: "js", resolveDir: root }));
      b.onLoad({ filter: /.*/, namespace: "teamd-owner" }, (args) => ({
        contents: `module.exports = require("owner-bundle")[${JSON.stringify(args.path)}]();`,
        loader: "js",
        resolveDir: root,
      }));
      b.onResolve({ filter: /.*/ }, (args) => {
        if (args.kind !== "dynamic-import") return undefined;
        const target = join(args.resolveDir, args.path);
        // A require, not an import(): Node's import() of a CommonJS file lexes all of it for its export names first.
        if (target === join(root, "daemon", "client-commands.js")) return { path: "client-commands", namespace: "teamd-client" };
        if (target === join(root, "daemon", "cli.js")) return { path: "cli", namespace: "teamd-tree" };
        if (target === join(root, "daemon", "server", "serve.js")) return { path: "serve", namespace: "teamd-daemon" };
        if (dirname(target) === join(root, "daemon", "commands")) {
          const name = relative(join(root, "daemon"), target).replace(/\.js$/, "").split(sep).join("/");
          ownerCommands.add(name);
          return { path: name, namespace: "teamd-owner" };
        }
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
  options: {
    plugins?: Plugin[];
    sourcemap?: boolean;
    external?: readonly string[];
    define?: Readonly<Record<string, string>>;
    banner?: string;
    /** The entry's text, where it has no file of its own (`entry` then names it, in its folder). */
    entryText?: string;
  } = {},
): Promise<string> {
  const outfile = join(root, relativeOut);
  const temp = `${outfile}.${process.pid}.tmp`;
  await mkdir(dirname(outfile), { recursive: true });
  const result = await build({
    ...(options.entryText !== undefined
      ? { stdin: { contents: options.entryText, resolveDir: join(root, dirname(entry)), sourcefile: basename(entry), loader: "js" as const } }
      : { entryPoints: [join(root, entry)] }),
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
    external: [...(options.external ?? [])],
    define: { ...(options.define ?? {}) },
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
 * An import() of an external package (the daemon's `import("node-pty")`) as a require behind a
 * promise: a bundle runs as a vm Script (src/rpc/bundle-loader.ts), which has no module loader for
 * import() ("A dynamic import callback was not specified"), while require is the bundle's own.
 */
function externalImportsRequired(packages: readonly string[]): Plugin {
  return {
    name: "external-imports-required",
    setup(b) {
      b.onResolve({ filter: /.*/ }, (args) =>
        args.kind === "dynamic-import" && packages.includes(args.path) ? { path: args.path, namespace: "teamd-external" } : undefined,
      );
      b.onLoad({ filter: /.*/, namespace: "teamd-external" }, (args) => ({
        contents: `module.exports = require(${JSON.stringify(args.path)});`,
        loader: "js",
      }));
    },
  };
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
