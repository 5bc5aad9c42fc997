// The walls between teamd's folders (docs/development.md, "Rooms and walls"). Each wall names
// the files it holds (folder prefixes ending in "/", or exact files), the targets those files
// may not import, and the exceptions inside those targets. A target is either a path in the
// tree — a relative specifier resolved against the importing file, so "../seat/../server/x.js"
// is caught as daemon/server/x.ts — or a module name ("node:fs"; a bare built-in counts as its
// node: name). Static imports, re-exports, import(), import types and require() all count; a
// computed specifier in a walled file cannot be checked and is refused.
import { builtinModules } from "node:module";
import path from "node:path";
import { moduleSourceVisitors } from "./module-sources.js";

/** @param {string} file @param {readonly string[]} entries */
function matches(file, entries) {
  return entries.some((entry) => (entry.endsWith("/") ? file.startsWith(entry) : file === entry));
}

/** @param {string} spec a module specifier that is not relative: a bare built-in gets its node: name */
function moduleName(spec) {
  return !spec.startsWith("node:") && builtinModules.includes(spec) ? `node:${spec}` : spec;
}

/** @type {import("eslint").Rule.RuleModule} */
const rule = {
  meta: {
    type: "problem",
    docs: { description: "teamd's folders import only across the walls docs/development.md draws" },
    schema: [
      {
        type: "array",
        items: {
          type: "object",
          properties: {
            name: { type: "string" },
            files: { type: "array", items: { type: "string" } },
            except: { type: "array", items: { type: "string" } },
            forbid: { type: "array", items: { type: "string" } },
            allow: { type: "array", items: { type: "string" } },
            modules: { type: "array", items: { type: "string" } },
            message: { type: "string" },
          },
          required: ["name", "files", "message"],
          additionalProperties: false,
        },
      },
    ],
    messages: {
      wall: "wall {{name}}: '{{spec}}' ({{target}}) — {{message}}",
      dynamic: "wall {{name}}: a computed module specifier cannot be checked against the walls, so it is refused.",
    },
  },
  create(context) {
    const walls = context.options[0] ?? [];
    const root = path
      .resolve(context.cwd ?? context.getCwd())
      .split(path.sep)
      .join("/");
    const absolute = path
      .resolve(context.filename ?? context.getFilename())
      .split(path.sep)
      .join("/");
    if (!absolute.startsWith(root + "/")) return {};
    const file = absolute.slice(root.length + 1);
    const mine = walls.filter((w) => matches(file, w.files) && !matches(file, w.except ?? []));
    if (mine.length === 0) return {};
    const here = path.posix.dirname(file);

    /** @param {import("estree").Node} node @param {unknown} source */
    function check(node, source) {
      if (!source || source.type !== "Literal" || typeof source.value !== "string") {
        context.report({ node, messageId: "dynamic", data: { name: mine[0].name } });
        return;
      }
      const spec = source.value;
      const relative = spec.startsWith(".");
      const target = relative ? path.posix.normalize(path.posix.join(here, spec)).replace(/\.js$/, ".ts") : moduleName(spec);
      for (const wall of mine) {
        const refused = relative
          ? matches(target, wall.forbid ?? []) && !matches(target, wall.allow ?? [])
          : (wall.modules ?? []).some((m) => target === m || target.startsWith(`${m}/`));
        if (refused) context.report({ node, messageId: "wall", data: { name: wall.name, spec, target, message: wall.message } });
      }
    }

    return moduleSourceVisitors(check);
  },
};

export default rule;
