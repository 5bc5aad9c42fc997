// Wall 10 (docs/development.md): in daemon/, the clock and ids are injected. One file makes the
// real ones (daemon/host/ambient.ts); everything else gets `now` and `newId` from the
// composition root (daemon/server/daemon.ts) or, in the owner's CLI, from the program's entry
// (daemon/cli.ts) — so a test can fix them. This rule refuses reading them directly:
//   - `Date.now()`, `Date()` and `new Date()` without an argument (the time now),
//   - `randomUUID()` (imported from node:crypto, or as `crypto.randomUUID()`).
// `new Date(ms)` formats a time the code was given, and is fine. A custom rule rather than a
// no-restricted-syntax entry: flat-config entries of one rule for the same files replace each
// other, so this wall cannot be lost to (or undo) another block's list.
// Proven to fire by test/lint/injected-ambient.test.ts.

/** @type {import("eslint").Rule.RuleModule} */
const rule = {
  meta: {
    type: "problem",
    docs: { description: "daemon/ reads the clock and makes ids only through the injected now/newId (daemon/host/ambient.ts makes the real ones)" },
    schema: [],
    messages: {
      clock:
        "the clock is injected in daemon/ (wall 10): take `now` from the composition root or the program's entry (daemon/host/ambient.ts makes the real one), not {{what}}.",
      id: "ids are injected in daemon/ (wall 10): take `newId` from the composition root or the program's entry (daemon/host/ambient.ts makes the real one), not {{what}}.",
    },
  },
  create(context) {
    const isDate = (node) => node.type === "Identifier" && node.name === "Date";
    return {
      CallExpression(node) {
        const callee = node.callee;
        if (callee.type === "MemberExpression" && !callee.computed && callee.property.type === "Identifier") {
          if (isDate(callee.object) && callee.property.name === "now") context.report({ node, messageId: "clock", data: { what: "Date.now()" } });
          else if (callee.property.name === "randomUUID") context.report({ node, messageId: "id", data: { what: "randomUUID()" } });
        } else if (isDate(callee)) context.report({ node, messageId: "clock", data: { what: "Date()" } });
        else if (callee.type === "Identifier" && callee.name === "randomUUID") context.report({ node, messageId: "id", data: { what: "randomUUID()" } });
      },
      NewExpression(node) {
        if (isDate(node.callee) && node.arguments.length === 0) context.report({ node, messageId: "clock", data: { what: "new Date()" } });
      },
    };
  },
};

export default rule;
