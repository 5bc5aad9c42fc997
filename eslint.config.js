// Lint is part of `npm test`. Two jobs beyond the usual: keep src/kernel/ pure (no modules
// but its own, no ambient world), and keep @grpc/grpc-js behind src/rpc/.
import tseslint from "typescript-eslint";
import kernelPurity from "./eslint-rules/kernel-purity.js";

/** Globals through which code touches the clock, randomness, the process, the network or timers. */
const AMBIENT = [
  "Date", "crypto", "process", "fetch", "performance", "setTimeout", "setInterval",
  "setImmediate", "clearTimeout", "clearInterval", "clearImmediate", "queueMicrotask",
  "globalThis", "global", "require", "module", "Buffer", "__dirname", "__filename",
  "XMLHttpRequest", "WebSocket", "navigator", "console", "Intl", "structuredClone",
  "SharedArrayBuffer", "Atomics", "WeakRef", "FinalizationRegistry",
].map((name) => ({
  name,
  message: `src/kernel/ is pure: '${name}' reaches the world; time, ids, randomness and hashes come in as arguments.`,
}));

export const kernelRules = {
  "teamd/kernel-purity": "error",
  "no-restricted-globals": ["error", ...AMBIENT],
  "no-restricted-properties": [
    "error",
    { object: "Math", property: "random", message: "src/kernel/ is pure: randomness comes in as an argument." },
  ],
  "no-restricted-syntax": [
    "error",
    { selector: "NewExpression[callee.name='Function']", message: "src/kernel/ is pure: no Function constructor." },
  ],
  "no-eval": "error",
  "no-implied-eval": "error",
  "no-new-func": "error",
};

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "src/gen/**", "test/fixtures/**"] },
  ...tseslint.configs.recommended,
  {
    plugins: { teamd: { rules: { "kernel-purity": kernelPurity } } },
    rules: {
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
      "no-restricted-imports": ["error", {
        paths: [{ name: "@grpc/grpc-js", message: "Only src/rpc/ imports @grpc/grpc-js; use its typed servers and clients." }],
      }],
    },
  },
  { files: ["src/kernel/**/*.ts"], rules: kernelRules },
);
