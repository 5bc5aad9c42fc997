import { readFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { createFileRegistry, toBinary, type DescFile } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, type FileDescriptorProto } from "@bufbuild/protobuf/wkt";
import type { Plugin } from "esbuild";
import { file_teamd_v1_common } from "../src/gen/teamd/v1/common_pb.js";
import { file_teamd_v1_control } from "../src/gen/teamd/v1/control_pb.js";
import { file_teamd_v1_lease } from "../src/gen/teamd/v1/lease_pb.js";
import { file_teamd_v1_ledger } from "../src/gen/teamd/v1/ledger_pb.js";
import { file_teamd_v1_shim } from "../src/gen/teamd/v1/shim_pb.js";
import { file_teamd_v1_whoami } from "../src/gen/teamd/v1/whoami_pb.js";

/**
 * The generated messages' descriptors, decoded at build time (issue 26). Each src/gen/ file holds
 * its proto file's descriptor as base64 (`fileDesc("...", [deps])`): at run time protobuf-es first
 * builds descriptor.proto's own descriptors (to read that encoding), then decodes the base64, then
 * builds the file's registry — ~10 ms of every client command's start (whoami, status, exec, a
 * push, a fetch), measured with V8's code cache. In the bundles (the shim, the CLI's client), each
 * such call becomes `decodedFileDesc(<the decoded FileDescriptorProto as a literal>, [deps])`:
 * the literal is the very object fileDesc builds (taken from the same generated file, loaded here,
 * with its json names restored and its dependencies named), and only the registry is built at
 * run time, by protobuf-es's createFileRegistry, as fileDesc builds it. A generated file not
 * listed in GENERATED fails the build (list it there).
 *
 * Checked here, not trusted: the literal is evaluated back and must encode to the same bytes as
 * the object it was written from, with the same own fields (protobuf-es's proto2 presence) and
 * the same defaults, and its registry must name the same messages, enums and services; a
 * difference fails the build.
 */
/** Every generated file, by its export's name. */
const GENERATED: Readonly<Record<string, DescFile>> = {
  file_teamd_v1_common,
  file_teamd_v1_control,
  file_teamd_v1_lease,
  file_teamd_v1_ledger,
  file_teamd_v1_shim,
  file_teamd_v1_whoami,
};

const FILE_DESC = /fileDesc\("([A-Za-z0-9+/=]+)"(?:, (\[[A-Za-z0-9_, ]*\]))?\)/;

export function decodedDescriptors(root: string): Plugin {
  const helper = join(root, "scripts", "decoded-file-desc.ts");
  return {
    name: "decoded-descriptors",
    setup(b) {
      b.onLoad({ filter: /[\\/]src[\\/]gen[\\/].*_pb\.ts$/ }, async (args) => {
        const source = await readFile(args.path, "utf8");
        const call = FILE_DESC.exec(source);
        if (call === null) throw new Error(`${args.path}: no fileDesc("...") call to decode`);
        const exported = /export const (file_[A-Za-z0-9_]+): GenFile = /.exec(source)?.[1];
        if (exported === undefined) throw new Error(`${args.path}: no exported file descriptor`);
        const file = Object.prototype.hasOwnProperty.call(GENERATED, exported) ? GENERATED[exported] : undefined;
        if (file === undefined) throw new Error(`${basename(args.path)}: ${exported} is not in scripts/decoded-descriptors.ts's GENERATED; list it there`);
        const literal = writeLiteral(file.proto);
        check(file, literal);
        const contents = source
          .replace(call[0], () => `decodedFileDesc(${literal}, ${call[2] ?? "[]"})`)
          // At the end (an import is hoisted): the file's lines keep their numbers for its source map.
          .concat(`\nimport { decodedFileDesc } from ${JSON.stringify(helper)};\n`);
        return { contents, loader: "ts", resolveDir: join(root, "src", "gen", "teamd", "v1") };
      });
    },
  };
}

/** A JS expression that builds `value` again: messages with their prototype (proto2's defaults) and only their own fields. */
function writeLiteral(value: unknown): string {
  const prototypes = new Map<object, number>();
  const protoTexts: string[] = [];
  const write = (v: unknown): string => {
    if (v === undefined) return "undefined";
    if (v === null) return "null";
    if (typeof v === "string") return JSON.stringify(v);
    if (typeof v === "number") {
      if (!Number.isFinite(v) || Object.is(v, -0)) throw new Error(`a descriptor holds the number ${v}`);
      return String(v);
    }
    if (typeof v === "boolean") return String(v);
    if (typeof v === "bigint") return `${v}n`;
    if (v instanceof Uint8Array) return `new Uint8Array([${[...v].join(",")}])`;
    if (Array.isArray(v)) return `[${v.map(write).join(",")}]`;
    if (typeof v === "object") {
      const fields = Object.keys(v).map((key) => `${JSON.stringify(key)}:${write((v as Record<string, unknown>)[key])}`);
      const proto = Object.getPrototypeOf(v) as object | null;
      if (proto === Object.prototype) return `{${fields.join(",")}}`;
      if (proto === null || Object.getPrototypeOf(proto) !== Object.prototype) throw new Error("a descriptor object with an unexpected prototype chain");
      let at = prototypes.get(proto);
      if (at === undefined) {
        at = protoTexts.length;
        prototypes.set(proto, at);
        protoTexts.push(`{${Object.keys(proto).map((key) => `${JSON.stringify(key)}:${write((proto as Record<string, unknown>)[key])}`)}}`);
      }
      return `m(${at},{${fields.join(",")}})`;
    }
    throw new Error(`a descriptor holds a ${typeof v}`);
  };
  const body = write(value);
  return `((p) => { const m = (i, o) => Object.assign(Object.create(p[i]), o); return ${body}; })([${protoTexts.join(",")}])`;
}

function check(file: DescFile, literal: string): void {
  // The build's own output, evaluated to check it.
  const rebuilt = new Function(`return ${literal};`)() as FileDescriptorProto;
  const same = (a: unknown, b: unknown, path: string): void => {
    if (typeof a !== "object" || a === null || typeof b !== "object" || b === null) {
      if (!(Object.is(a, b) || (a instanceof Uint8Array && b instanceof Uint8Array && Buffer.compare(a, b) === 0)))
        throw new Error(`decoded descriptor of ${file.name}: ${path} differs`);
      return;
    }
    if (a instanceof Uint8Array || b instanceof Uint8Array) return same(a instanceof Uint8Array ? a : 0, b instanceof Uint8Array ? b : 1, path);
    if (Array.isArray(a) !== Array.isArray(b)) throw new Error(`decoded descriptor of ${file.name}: ${path} differs`);
    const keys = Object.keys(a);
    if (keys.join("\0") !== Object.keys(b).join("\0")) throw new Error(`decoded descriptor of ${file.name}: ${path}'s own fields differ`);
    for (const key of keys) same((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key], `${path}.${key}`);
    const pa = Object.getPrototypeOf(a) as object;
    const pb = Object.getPrototypeOf(b) as object;
    if (pa === Object.prototype || pb === Object.prototype || Array.isArray(a)) {
      if ((pa === Object.prototype) !== (pb === Object.prototype)) throw new Error(`decoded descriptor of ${file.name}: ${path}'s defaults differ`);
      return;
    }
    same({ ...pa }, { ...pb }, `${path} (defaults)`);
  };
  same(file.proto, rebuilt, "proto");
  if (Buffer.compare(toBinary(FileDescriptorProtoSchema, file.proto), toBinary(FileDescriptorProtoSchema, rebuilt)) !== 0)
    throw new Error(`decoded descriptor of ${file.name}: encodes differently`);
  const deps = file.dependencies;
  const registry = createFileRegistry(rebuilt, (name) => deps.find((d) => d.proto.name === name));
  const names = (f: DescFile) => [...f.messages, ...f.enums, ...f.services].map((d) => d.typeName).join(",");
  const again = registry.getFile(rebuilt.name);
  if (again === undefined || names(again) !== names(file)) throw new Error(`decoded descriptor of ${file.name}: its registry differs`);
}
