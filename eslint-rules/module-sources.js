// Every way a file names another module — static import, re-export, import(), import type,
// `import x = require()` and require() — as one eslint visitor table. The kernel purity rule
// and the walls judge the same set of specifiers, so a form one of them missed would be a
// hole in both: they share this table.

/**
 * @param {(node: import("estree").Node, source: unknown) => void} check called with each
 *   node that names a module and its source node (a Literal, or something computed)
 */
export function moduleSourceVisitors(check) {
  return {
    ImportDeclaration: (node) => check(node, node.source),
    ExportAllDeclaration: (node) => check(node, node.source),
    ExportNamedDeclaration: (node) => {
      if (node.source) check(node, node.source);
    },
    ImportExpression: (node) => check(node, node.source),
    TSImportEqualsDeclaration: (node) => {
      const ref = node.moduleReference;
      if (ref && ref.type === "TSExternalModuleReference") check(node, ref.expression);
    },
    TSImportType: (node) => check(node, node.argument && node.argument.literal ? node.argument.literal : node.argument),
    CallExpression: (node) => {
      if (node.callee.type === "Identifier" && node.callee.name === "require") check(node, node.arguments[0]);
    },
  };
}
