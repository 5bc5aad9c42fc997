// No mutable module-level state (docs/development.md, wall 9; DESIGN.md "Style"). A module is
// loaded once per process, so what it holds at its top level is one value shared by every
// caller — every ledger, every seat, every test in the same worker — and set by whichever
// came first. State belongs to the object that owns it: a factory's closure, an instance,
// an argument. This rule refuses
//   - a top-level `let` or `var` (exported or not),
//   - a top-level `Map`, `Set`, `WeakMap` or `WeakSet` that the module writes to
//     (`.set`, `.add`, `.delete` or `.clear` on it, anywhere in the file).
// A frozen constant table (`Object.freeze({...})`, a `new Set([...])` only ever read) is fine.
// The one exception is a memo keyed by frozen inputs (the kernel's hot WeakMaps: what they
// hold follows from the key alone, so no caller can see another's): it stays, with its reason
// written beside it — `// eslint-disable-next-line teamd/module-state -- <why>`.
// Proven to fire by test/lint/module-state.test.ts.

const COLLECTIONS = new Set(["Map", "Set", "WeakMap", "WeakSet"]);
const WRITES = new Set(["set", "add", "delete", "clear"]);

/** Unwrap `x as T`, `x satisfies T`, `x!` and parentheses down to the expression itself. */
function unwrap(node) {
  let at = node;
  while (at && (at.type === "TSAsExpression" || at.type === "TSSatisfiesExpression" || at.type === "TSNonNullExpression" || at.type === "TSTypeAssertion")) {
    at = at.expression;
  }
  return at;
}

/** The collection a top-level const is made as (`new Map(...)` and the like), if any. */
function collectionOf(init) {
  const value = unwrap(init);
  if (!value || value.type !== "NewExpression" || value.callee.type !== "Identifier") return undefined;
  return COLLECTIONS.has(value.callee.name) ? value.callee.name : undefined;
}

/** The name of the method a member expression reads (`m.set`, `m["set"]`). */
function memberName(member) {
  if (!member.computed && member.property.type === "Identifier") return member.property.name;
  if (member.computed && member.property.type === "Literal" && typeof member.property.value === "string") return member.property.value;
  return undefined;
}

/** The statements at the module's top level that declare variables (`export` unwrapped). */
function topLevelDeclarations(program) {
  const found = [];
  for (const statement of program.body) {
    const declaration = statement.type === "ExportNamedDeclaration" ? statement.declaration : statement;
    if (declaration && declaration.type === "VariableDeclaration" && !declaration.declare) found.push(declaration);
  }
  return found;
}

/** `x.set(...)` and the like on this reference: the method and the line, if it is a write. */
function writeOf(identifier) {
  const member = identifier.parent;
  if (!member || member.type !== "MemberExpression" || member.object !== identifier) return undefined;
  const method = memberName(member);
  const call = member.parent;
  if (method === undefined || !WRITES.has(method) || !call || call.type !== "CallExpression" || call.callee !== member) return undefined;
  return { method, line: member.loc.start.line };
}

/**
 * The reference handed to a function of the same module that writes that parameter
 * (`level(stores, key, make)` where `level(map, ...)` calls `map.set`): one step deep.
 */
function writeThrough(identifier, moduleScope) {
  const call = identifier.parent;
  if (!call || call.type !== "CallExpression" || call.callee.type !== "Identifier") return undefined;
  const at = call.arguments.indexOf(identifier);
  if (at < 0) return undefined;
  const callee = moduleScope.set.get(call.callee.name);
  const def = callee?.defs[0]?.node;
  const fn = def?.type === "FunctionDeclaration" ? def : def?.type === "VariableDeclarator" && /Function/.test(def.init?.type ?? "") ? def.init : undefined;
  const param = fn?.params[at];
  if (!param || param.type !== "Identifier") return undefined;
  const scope = moduleScope.childScopes.find((s) => s.block === fn);
  const bound = scope?.set.get(param.name);
  return bound?.references.map((r) => writeOf(r.identifier)).find((w) => w !== undefined);
}

/** @type {import("eslint").Rule.RuleModule} */
const rule = {
  meta: {
    type: "problem",
    docs: { description: "no mutable module-level state: no top-level let/var, no top-level Map/Set/WeakMap/WeakSet the module writes to" },
    schema: [],
    messages: {
      binding:
        "no mutable module-level state: a top-level `{{kind}} {{name}}` is one value shared by every caller in the process; make it a const, or hold it in the object that owns it (a factory's closure, an instance, an argument).",
      collection:
        "no mutable module-level state: the module writes to its top-level {{type}} '{{name}}' (.{{method}} at line {{line}}); hold it in the object that owns it — or, for a memo keyed by frozen inputs, keep it with its reason: // eslint-disable-next-line teamd/module-state -- <why>.",
    },
  },
  create(context) {
    const sourceCode = context.sourceCode ?? context.getSourceCode();
    return {
      "Program:exit"(program) {
        const declarations = topLevelDeclarations(program);
        for (const declaration of declarations) {
          if (declaration.kind === "const") continue;
          const names = declaration.declarations.flatMap((d) => (d.id.type === "Identifier" ? [d.id.name] : [sourceCode.getText(d.id)]));
          context.report({ node: declaration, messageId: "binding", data: { kind: declaration.kind, name: names.join(", ") } });
        }

        const scope = sourceCode.getScope ? sourceCode.getScope(program) : context.getScope();
        // In a module, the top-level bindings live in the module scope beneath the global one.
        const moduleScope = scope.type === "module" ? scope : (scope.childScopes.find((s) => s.type === "module") ?? scope);
        for (const declaration of declarations) {
          if (declaration.kind !== "const") continue;
          for (const declarator of declaration.declarations) {
            if (declarator.id.type !== "Identifier") continue;
            const type = collectionOf(declarator.init);
            if (type === undefined) continue;
            const variable = moduleScope.set.get(declarator.id.name);
            if (!variable) continue;
            const write = variable.references.map((r) => writeOf(r.identifier) ?? writeThrough(r.identifier, moduleScope)).find((w) => w !== undefined);
            if (write === undefined) continue;
            context.report({
              node: declarator,
              messageId: "collection",
              data: { type, name: declarator.id.name, method: write.method, line: String(write.line) },
            });
          }
        }
      },
    };
  },
};

export default rule;
