// Wall 8 (docs/development.md; issue 19): inside daemon/seat/, only the pipeline
// (daemon/seat/pipeline.ts) constructs a RefusalError. Every refusal a seat meets goes through
// the pipeline — `throw await pipeline.refuse(...)` records it with its rule, once, and
// `pipeline.outcomeRefusal(...)` answers one whose outcome is already on record — so none can
// be thrown past the ledger (§15: every refused attempt is recorded). The rule refuses
//   - `new RefusalError(...)`, under any local name it was imported as,
//   - `RefusalError.from(...)`,
//   - a class that extends RefusalError (a way round the two above).
// `instanceof RefusalError` and type positions stay allowed: reading a refusal is not making one.
// The config applies it to daemon/seat/** except the pipeline. Proven to fire by
// test/lint/wall-refusals.test.ts.

const NAME = "RefusalError";

/** @type {import("eslint").Rule.RuleModule} */
export default {
  meta: {
    type: "problem",
    docs: { description: "inside daemon/seat/, only the pipeline constructs a RefusalError (wall 8)" },
    schema: [],
    messages: {
      construct:
        "wall 8: only daemon/seat/pipeline.ts constructs a RefusalError; refuse through the pipeline (`throw await pipeline.refuse(ctx, refuse(rule, reason), action)`, or `pipeline.outcomeRefusal` when the act's outcome already records it) so the refusal is on record, once (§15).",
    },
  },
  create(context) {
    const names = new Set([NAME]);
    const isRefusalError = (node) =>
      (node?.type === "Identifier" && names.has(node.name)) ||
      (node?.type === "MemberExpression" && !node.computed && node.property.type === "Identifier" && node.property.name === NAME);
    return {
      ImportSpecifier(node) {
        const imported = node.imported.type === "Identifier" ? node.imported.name : node.imported.value;
        if (imported === NAME) names.add(node.local.name);
      },
      NewExpression(node) {
        if (isRefusalError(node.callee)) context.report({ node, messageId: "construct" });
      },
      CallExpression(node) {
        const callee = node.callee;
        if (
          callee.type === "MemberExpression" &&
          !callee.computed &&
          callee.property.type === "Identifier" &&
          callee.property.name === "from" &&
          isRefusalError(callee.object)
        ) {
          context.report({ node, messageId: "construct" });
        }
      },
      "ClassDeclaration, ClassExpression"(node) {
        if (isRefusalError(node.superClass)) context.report({ node, messageId: "construct" });
      },
    };
  },
};
