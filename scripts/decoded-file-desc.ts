import { createFileRegistry, type DescFile } from "@bufbuild/protobuf";
import type { GenFile } from "@bufbuild/protobuf/codegenv2";
import type { FileDescriptorProto } from "@bufbuild/protobuf/wkt";

/**
 * What protobuf-es's fileDesc does once it has decoded a file's descriptor, for a descriptor the
 * build decoded already (scripts/decoded-descriptors.ts): the file's registry, its dependencies
 * resolved from the files it imports. Only the bundles use it (the shim, the CLI's client).
 */
export function decodedFileDesc(root: FileDescriptorProto, imports: readonly DescFile[]): GenFile {
  const registry = createFileRegistry(root, (name) => imports.find((f) => f.proto.name === name));
  const file = registry.getFile(root.name);
  if (file === undefined) throw new Error(`no file ${root.name} in its own registry`);
  return file as GenFile;
}
