// Lint is part of `npm test`. Two jobs beyond the usual: keep src/kernel/ pure (no modules
// but its own, no ambient world), and keep @grpc/grpc-js behind src/rpc/.
import tseslint from "typescript-eslint";
import kernelPurity from "./eslint-rules/kernel-purity.js";
import walls from "./eslint-rules/walls.js";
import moduleState from "./eslint-rules/module-state.js";
import injectedAmbient from "./eslint-rules/injected-ambient.js";
import seatRefusals from "./eslint-rules/seat-refusals.js";

/** Globals through which code touches the clock, randomness, the process, the network or timers. */
const AMBIENT = [
  "Date",
  "crypto",
  "process",
  "fetch",
  "performance",
  "setTimeout",
  "setInterval",
  "setImmediate",
  "clearTimeout",
  "clearInterval",
  "clearImmediate",
  "queueMicrotask",
  "globalThis",
  "global",
  "require",
  "module",
  "Buffer",
  "__dirname",
  "__filename",
  "XMLHttpRequest",
  "WebSocket",
  "navigator",
  "console",
  "Intl",
  "structuredClone",
  "SharedArrayBuffer",
  "Atomics",
  "WeakRef",
  "FinalizationRegistry",
].map((name) => ({
  name,
  message: `src/kernel/ is pure: '${name}' reaches the world; time, ids, randomness and hashes come in as arguments.`,
}));

export const kernelRules = {
  "teamd/kernel-purity": "error",
  "no-restricted-globals": ["error", ...AMBIENT],
  "no-restricted-properties": ["error", { object: "Math", property: "random", message: "src/kernel/ is pure: randomness comes in as an argument." }],
  "no-restricted-syntax": ["error", { selector: "NewExpression[callee.name='Function']", message: "src/kernel/ is pure: no Function constructor." }],
  "no-eval": "error",
  "no-implied-eval": "error",
  "no-new-func": "error",
};

/** A seat's socket reaches these (the service, the pipeline and its lock and budgets); every other file in daemon/seat/ is a handler. */
const SEAT_CORE = ["daemon/seat/shim-service.ts", "daemon/seat/pipeline.ts", "daemon/seat/decision-lock.ts", "daemon/seat/token-buckets.ts"];
const PROGRAMS = ["daemon/main.ts", "daemon/cli.ts"];

/**
 * The walls of docs/development.md ("Rooms and walls"), one entry each, kept by
 * eslint-rules/walls.js and proven to fire by test/lint/walls.test.ts.
 */
export const WALLS = [
  { name: "1", files: ["src/"], forbid: ["daemon/", "shim/"], message: "src/ is the library; the programs (daemon/, shim/) import it, never the reverse." },
  { name: "rooms", files: ["daemon/"], except: PROGRAMS, forbid: PROGRAMS, message: "main.ts and cli.ts are the program's entry; no room imports them." },
  {
    name: "2",
    files: ["daemon/host/"],
    forbid: ["daemon/"],
    allow: ["daemon/host/"],
    message: "daemon/host/ is the ground floor (TEAMD_HOME layout, names, hub, keys): it imports no other room.",
  },
  {
    name: "3",
    files: ["daemon/commands/"],
    forbid: ["daemon/server/", "daemon/seat/", "daemon/lifecycle/"],
    allow: ["daemon/lifecycle/registry.ts", "daemon/lifecycle/kill.ts"],
    message:
      "the owner's CLI is not the daemon: it talks to it over the control socket, and of lifecycle/ uses only the registry and the kill (the owner's stop works with the daemon down).",
  },
  {
    name: "4",
    files: ["daemon/owner/"],
    forbid: ["daemon/"],
    allow: ["daemon/owner/", "daemon/host/"],
    message: "owner acts run in the daemon and, with it down, in the CLI: they use only host/ and src/.",
  },
  {
    name: "5",
    files: ["daemon/lifecycle/"],
    forbid: ["daemon/seat/", "daemon/server/", "daemon/commands/"],
    message: "a seat's lifecycle never reaches what its socket serves, the daemon process or the owner's CLI.",
  },
  {
    name: "6",
    files: ["daemon/seat/"],
    forbid: ["daemon/"],
    allow: ["daemon/seat/", "daemon/host/"],
    message: "what a seat's socket reaches imports no other room but host/ (paths).",
  },
  {
    name: "6 (handlers)",
    files: ["daemon/seat/"],
    except: SEAT_CORE,
    forbid: ["daemon/seat/"],
    allow: ["daemon/seat/pipeline.ts"],
    message: "a handler imports only the pipeline: it refuses, records and decides through it.",
  },
  {
    name: "6 (who imports handlers)",
    files: ["daemon/", "src/", "shim/", "scripts/"],
    except: ["daemon/seat/shim-service.ts", "daemon/server/daemon.ts"],
    forbid: ["daemon/seat/"],
    allow: SEAT_CORE,
    message: "only the shim service and the composition root (daemon/server/daemon.ts) import a handler.",
  },
  {
    name: "7",
    files: ["daemon/seat/"],
    modules: ["node:fs", "node:fs/promises", "node:child_process"],
    message: "daemon/seat/ touches no file or process itself: that is src/effects/'s.",
  },
  { name: "7 (net)", files: ["daemon/seat/"], except: ["daemon/seat/egress.ts"], modules: ["node:net"], message: "only the egress handler opens connections." },
];

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "src/gen/**", "test/fixtures/**"] },
  ...tseslint.configs.recommended,
  {
    plugins: {
      teamd: {
        rules: { "kernel-purity": kernelPurity, walls, "module-state": moduleState, "injected-ambient": injectedAmbient, "seat-refusals": seatRefusals },
      },
    },
    rules: {
      "teamd/walls": ["error", WALLS],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
    },
  },
  {
    // Only src/rpc/ talks grpc-js. The bench's bare baseline is the one exception: it
    // must measure grpc-js without our layer in between; test/rpc/ speaks raw grpc-js to
    // send what our client never would (a wrong protocol version).
    files: ["**/*.ts"],
    ignores: ["src/rpc/**", "scripts/bench/bare-*.ts", "test/rpc/**"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: [{ name: "@grpc/grpc-js", message: "Only src/rpc/ imports @grpc/grpc-js; use its typed servers and clients." }],
        },
      ],
    },
  },
  {
    // src/rpc/'s barrel and refusal.ts load the gRPC server (grpc-js, ~65 modules): a command or
    // a module the CLI loads that reached them through an error class paid for it at every start
    // (issue 26). Outside src/rpc/, import the module that defines what is needed.
    files: ["src/**/*.ts", "daemon/**/*.ts", "shim/**/*.ts"],
    ignores: ["src/rpc/**"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: [{ name: "@grpc/grpc-js", message: "Only src/rpc/ imports @grpc/grpc-js; use its typed servers and clients." }],
          patterns: [
            {
              group: ["**/rpc/index.js", "**/rpc/refusal.js"],
              allowTypeImports: true,
              message:
                "it loads the gRPC server into whatever imports it; import from the module that defines the name (src/rpc/errors.js, client.js, server.js, cli-outcome.js, protocol.js)",
            },
          ],
        },
      ],
    },
  },
  { files: ["src/kernel/**/*.ts"], rules: kernelRules },
  // Wall 8: inside daemon/seat/, only the pipeline constructs a RefusalError (eslint-rules/seat-refusals.js):
  // its own rule, so it never replaces (nor is replaced by) another block's no-restricted-syntax.
  { files: ["daemon/seat/**/*.ts"], ignores: ["daemon/seat/pipeline.ts"], rules: { "teamd/seat-refusals": "error" } },
  // Wall 9: no mutable module-level state (eslint-rules/module-state.js; src/gen/ is ignored above).
  { files: ["src/**/*.ts", "daemon/**/*.ts"], rules: { "teamd/module-state": "error" } },
  // Wall 10: in daemon/ the clock and ids come in through the composition root or the CLI's entry;
  // daemon/host/ambient.ts alone makes the real ones (eslint-rules/injected-ambient.js).
  { files: ["daemon/**/*.ts"], ignores: ["daemon/host/ambient.ts"], rules: { "teamd/injected-ambient": "error" } },
);
