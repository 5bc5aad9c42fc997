// The kernel (src/kernel/) is pure: it decides from data alone. This rule keeps it so by
// refusing every way a kernel file could reach the world through a module:
//   - `node:*` and bare built-ins ("fs", "crypto"),
//   - any package (a bare specifier),
//   - a relative path that leaves src/kernel/ (another src/ folder, daemon/, ...),
// whether by static import, re-export, dynamic import() or require().
// Ambient globals (Date, timers, process, crypto, ...) are refused by
// no-restricted-globals in eslint.config.js; this rule is only about modules.
import path from "node:path";
import { moduleSourceVisitors } from "./module-sources.js";

/** @param {string} filename @returns {string | undefined} the kernel root, if inside it */
function kernelRootOf(filename) {
  const norm = filename.split(path.sep).join("/");
  const at = norm.lastIndexOf("/src/kernel/");
  if (at < 0) return undefined;
  return norm.slice(0, at + "/src/kernel".length);
}

/** @type {import("eslint").Rule.RuleModule} */
const rule = {
  meta: {
    type: "problem",
    docs: { description: "src/kernel/ imports nothing but src/kernel/ (no node:*, no packages, no other src/ folder)" },
    schema: [],
    messages: {
      builtin: "src/kernel/ is pure: '{{spec}}' is a Node built-in (I/O, clock, randomness and hashing come in as arguments).",
      pkg: "src/kernel/ is pure: '{{spec}}' is a package; the kernel imports only other src/kernel/ files.",
      outside: "src/kernel/ is pure: '{{spec}}' leaves src/kernel/; other modules may import the kernel, never the reverse.",
      dynamic: "src/kernel/ is pure: a computed module specifier cannot be checked, so it is refused.",
    },
  },
  create(context) {
    const filename = context.filename ?? context.getFilename();
    const root = kernelRootOf(path.resolve(filename));
    if (!root) return {};
    const here = path.posix.dirname(path.resolve(filename).split(path.sep).join("/"));

    /** @param {import("estree").Node} node @param {unknown} source */
    function check(node, source) {
      if (!source || source.type !== "Literal" || typeof source.value !== "string") {
        context.report({ node, messageId: "dynamic" });
        return;
      }
      const spec = source.value;
      if (spec.startsWith("node:")) return context.report({ node, messageId: "builtin", data: { spec } });
      if (!spec.startsWith(".") && !spec.startsWith("/")) {
        // A bare specifier: either a built-in without the node: prefix or a package.
        const isBuiltin =
          /^(fs|path|os|crypto|child_process|net|http|https|http2|dgram|dns|tls|worker_threads|cluster|process|timers|perf_hooks|vm|v8|util|stream|events|buffer|url|zlib|readline|module|async_hooks|inspector|tty)(\/|$)/.test(
            spec,
          );
        return context.report({ node, messageId: isBuiltin ? "builtin" : "pkg", data: { spec } });
      }
      const target = path.posix.resolve(here, spec);
      if (target !== root && !target.startsWith(root + "/")) {
        context.report({ node, messageId: "outside", data: { spec } });
      }
    }

    return moduleSourceVisitors(check);
  },
};

export default rule;
