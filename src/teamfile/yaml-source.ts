import { type Document, LineCounter, type Node, isMap, isPair, isScalar, isSeq, parseDocument, visit } from "yaml";
import type { InputPath } from "../kernel/policy-input.js";

/**
 * The team file's YAML, parsed once with positions kept, so that every problem — found by
 * the loader or by the kernel, each at a key path — is reported at its line and column.
 * YAML 1.2 core schema: no implicit dates, no `<<` merge keys; duplicate keys, unresolved tags
 * and any other warning are errors, because a file that parses "with a warning" means
 * something other than what it says.
 */
export interface Position {
  readonly line: number;
  readonly column: number;
}

export interface YamlSyntaxProblem extends Position {
  readonly message: string;
}

export interface YamlSource {
  /** The document as plain data; undefined when it could not be built. */
  readonly data: unknown;
  readonly syntax: readonly YamlSyntaxProblem[];
  /** Where a key path is: its key, or its value (falling back to the nearest ancestor found). */
  locate(at: InputPath, part: "key" | "value"): Position | undefined;
  /** Every scalar string in the document with its position (for the credential-shape check). */
  strings(): readonly { readonly value: string; readonly position: Position }[];
}

export function parseYamlSource(text: string): YamlSource {
  const lineCounter = new LineCounter();
  const doc: Document.Parsed = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true, version: "1.2", merge: false });
  const position = (offset: number): Position => {
    const { line, col } = lineCounter.linePos(offset);
    return { line, column: col };
  };
  const syntax: YamlSyntaxProblem[] = [...doc.errors, ...doc.warnings].map((e) => {
    const at = position(e.pos[0]);
    // The message alone (prettyErrors off): the library's excerpt of the line could carry a secret.
    return { line: at.line, column: at.column, message: e.message.split("\n")[0] ?? e.message };
  });
  let data: unknown;
  try {
    data = syntax.length === 0 ? doc.toJS({ maxAliasCount: 100 }) : undefined;
  } catch (error) {
    syntax.push({ line: 1, column: 1, message: error instanceof Error ? error.message : String(error) });
  }

  const locate = (at: InputPath, part: "key" | "value"): Position | undefined => {
    let node: unknown = doc.contents;
    let found: Position | undefined = node !== null && isNodeWithRange(node) ? position(node.range[0]) : undefined;
    for (let i = 0; i < at.length; i++) {
      const segment = at[i];
      const last = i === at.length - 1;
      if (isMap(node)) {
        const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(segment));
        if (pair === undefined) return found;
        const keyNode = pair.key as Node;
        if (isNodeWithRange(keyNode)) found = position(keyNode.range[0]);
        if (last && part === "key") return found;
        node = pair.value;
        if (node !== null && isNodeWithRange(node)) found = position(node.range[0]);
      } else if (isSeq(node) && typeof segment === "number") {
        node = node.items[segment];
        if (node === undefined) return found;
        if (node !== null && isNodeWithRange(node)) found = position(node.range[0]);
      } else return found;
    }
    return found;
  };

  const strings = (): { value: string; position: Position }[] => {
    const out: { value: string; position: Position }[] = [];
    visit(doc, {
      Scalar(_key, node) {
        if (typeof node.value === "string" && node.range) out.push({ value: node.value, position: position(node.range[0]) });
      },
    });
    return out;
  };

  return { data, syntax, locate, strings };
}

function isNodeWithRange(node: unknown): node is { range: [number, number, number] } {
  return typeof node === "object" && node !== null && Array.isArray((node as { range?: unknown }).range);
}
