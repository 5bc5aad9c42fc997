import { readFile, stat } from "node:fs/promises";
import { readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import { compilePolicy } from "../kernel/policy-compile.js";
import type { InputPath, PolicyInput, PolicyProblem } from "../kernel/policy-input.js";
import { canonicalPath } from "../kernel/paths.js";
import { type Policy, type PolicyHashes, sealPolicy } from "../kernel/policy.js";
import { isPlainObject } from "../kernel/records.js";
import { credentialShape } from "./credentials.js";
import { type TeamFileError, showInputPath, sortErrors } from "./errors.js";
import { hashPolicy, sha256 } from "./hashes.js";
import { readTeamFileData } from "./schema.js";
import { type Position, parseYamlSource } from "./yaml-source.js";

/**
 * The team-file loader: YAML text (or the same data as an object) in; either every problem —
 * each with its line, the rule and a fix — or the validated, deeply frozen policy the kernel
 * decides with, its canonical form and its content hashes. Nothing here decides authority:
 * the structure is checked against the published schema, the kernel compiles the rest, and
 * this module adds what the kernel may not do itself — reading start files, hashing, and
 * asking the filesystem whether a key-shaped value is in fact a directory.
 */
export interface LoadOptions {
  /** The team file's repo-relative path: a reserved path (§3). Default `teamd.yaml`. */
  readonly teamFilePath?: string;
  /** Reads a pinned start file by repo-relative path; undefined when it cannot be read. */
  readonly readStartFile?: (path: string) => Uint8Array | undefined;
  /**
   * The start files' recorded hashes, by repo-relative path: restoring the policy in force
   * from its record (`LoadedPolicy.startFiles`), without reading the files again. When given,
   * `readStartFile` is not used.
   */
  readonly startFileHashes?: Readonly<Record<string, string>>;
  /** Whether a value is a path to a real existing directory (exempt from the key-shape check). */
  readonly isDirectory?: (value: string) => boolean;
  /**
   * The file is a policy proposed by an authority change (add, remove, grant), not a launch:
   * its seats are not refused against the constraints here — `checkAuthorityChange` decides
   * the change against the policy in force, atomically (§5).
   */
  readonly proposal?: boolean;
}

export interface LoadedPolicy {
  readonly ok: true;
  readonly policy: Policy;
  /** The canonical form: what the owner signs and the policy record keeps (`teamd apply`). */
  readonly canonical: string;
  readonly hashes: PolicyHashes;
  /** Content hash of each pinned start file, by repo-relative path. */
  readonly startFiles: Readonly<Record<string, string>>;
}

export interface LoadFailure {
  readonly ok: false;
  readonly errors: readonly TeamFileError[];
}

export type LoadResult = LoadedPolicy | LoadFailure;

interface Source {
  readonly data: unknown;
  readonly syntax: readonly { readonly line: number; readonly column: number; readonly message: string }[];
  readonly locate: (at: InputPath, part: "key" | "value") => Position | undefined;
  /** Strings with positions when the data could not be built (a syntax error). */
  readonly looseStrings: () => readonly { readonly value: string; readonly position: Position }[];
}

/** Every string in the data (keys and values) with its key path. */
function* stringsOf(value: unknown, at: InputPath): Generator<{ value: string; at: InputPath; part: "key" | "value" }> {
  if (typeof value === "string") yield { value, at, part: "value" };
  else if (Array.isArray(value)) for (let i = 0; i < value.length; i++) yield* stringsOf(value[i], [...at, i]);
  else if (isPlainObject(value)) {
    for (const [key, v] of Object.entries(value)) {
      yield { value: key, at: [...at, key], part: "key" };
      yield* stringsOf(v, [...at, key]);
    }
  }
}

function load(source: Source, options: LoadOptions): LoadResult {
  const errors: TeamFileError[] = [];
  const place = (p: PolicyProblem): TeamFileError => {
    const at = source.locate(p.at, p.part);
    return { rule: p.rule, at: showInputPath(p.at), ...(at !== undefined ? { line: at.line, column: at.column } : {}), message: p.message, fix: p.fix };
  };
  for (const s of source.syntax) {
    errors.push({
      rule: "teamfile.syntax",
      at: "(yaml)",
      line: s.line,
      column: s.column,
      message: s.message,
      fix: "correct the YAML at this line (indentation, quoting, a missing `:` or a repeated key)",
    });
  }
  const isDirectory = options.isDirectory ?? (() => false);
  const secret = (value: string): string | undefined => {
    const shape = credentialShape(value, isDirectory);
    return shape === undefined
      ? undefined
      : `a value has a known credential shape (${shape.name}: ${shape.looksLike}); teamd does not ask for, store or print the labs' keys`;
  };
  const secretFix = "remove it: the agent's own program keeps its own login (§11); a path to a real directory is exempt";
  if (source.data === undefined) {
    for (const s of source.looseStrings()) {
      const message = secret(s.value);
      if (message !== undefined) errors.push({ rule: "secret.shape", at: "(yaml)", line: s.position.line, column: s.position.column, message, fix: secretFix });
    }
    return { ok: false, errors: sortErrors(errors) };
  }
  for (const s of stringsOf(source.data, [])) {
    const message = secret(s.value);
    if (message !== undefined) errors.push(place({ rule: "secret.shape", at: s.at, part: s.part, message, fix: secretFix }));
  }
  const teamFilePath = options.teamFilePath ?? "teamd.yaml";
  const schema = readTeamFileData(source.data, teamFilePath);
  errors.push(...schema.problems.map(place));
  if (schema.blocking) return { ok: false, errors: sortErrors(errors) };
  const compiled = compilePolicy(options.proposal === true ? { ...schema.input, proposal: true } : schema.input);
  if (!compiled.ok) errors.push(...compiled.problems.map(place));
  if (!compiled.ok || errors.length > 0) {
    // Every error at once (issue 22): start files that cannot be read are named too, not only
    // after the rest is fixed. Only from disk (a recorded policy's hashes come with it).
    if (options.startFileHashes === undefined && options.readStartFile !== undefined)
      errors.push(...unreadableDeclared(schema.input, options.readStartFile).map(place));
    return { ok: false, errors: sortErrors(errors) };
  }

  const recorded = options.startFileHashes;
  const read = options.readStartFile;
  const hashed = hashPolicy(compiled.policy, (file) => {
    if (recorded !== undefined) return Object.prototype.hasOwnProperty.call(recorded, file) ? recorded[file] : undefined;
    const bytes = read?.(file);
    return bytes === undefined ? undefined : sha256(bytes);
  });
  for (const u of hashed.unreadable) {
    const at = "seat" in u ? ["seats", u.seat, "start", "files", u.index] : ["deploy", u.deploy, "files", u.index];
    const what = "seat" in u ? "start file" : "deploy file";
    errors.push(
      place({
        rule: "teamfile.schema",
        at,
        part: "value",
        message: `${what} '${u.path}' cannot be read, so it cannot be pinned`,
        fix: "create the file, or correct its repo-relative path",
      }),
    );
  }
  if (errors.length > 0) return { ok: false, errors: sortErrors(errors) };
  const sealed = sealPolicy(compiled.policy, hashed.hashes);
  if (!sealed.ok) {
    return {
      ok: false,
      errors: [
        {
          rule: "kernel.fault",
          at: "(policy)",
          message: `the policy could not be sealed: missing ${sealed.missing.join(", ")}`,
          fix: "report this as a teamd bug",
        },
      ],
    };
  }
  return { ok: true, policy: sealed.policy, canonical: compiled.policy.canonical, hashes: hashed.hashes, startFiles: hashed.startFiles };
}

/** Load a team file from its YAML text; problems carry lines and columns. */
export function loadTeamFileText(text: string, options: LoadOptions = {}): LoadResult {
  const yaml = parseYamlSource(text);
  return load({ data: yaml.data, syntax: yaml.syntax, locate: yaml.locate, looseStrings: yaml.strings }, options);
}

/** Load a team file given as data (the case runner's object policies); no line numbers. */
export function loadTeamFileData(data: unknown, options: LoadOptions = {}): LoadResult {
  return load({ data, syntax: [], locate: () => undefined, looseStrings: () => [] }, options);
}

/**
 * Load `teamd.yaml` from disk. Its directory is the repository root: start files are read
 * from there, and a key-shaped value is exempt when it resolves (from there, or from `~/`)
 * to a real directory. Reading the file itself may throw (an I/O failure, not a policy).
 */
export async function loadTeamFile(file: string, options: { readonly proposal?: boolean } = {}): Promise<LoadResult> {
  const absolute = path.resolve(file);
  const root = path.dirname(absolute);
  if (!(await stat(absolute)).isFile()) throw new Error(`${file} is not a file`);
  const text = await readFile(absolute, "utf8");
  return loadTeamFileText(text, {
    ...(options.proposal === true ? { proposal: true } : {}),
    teamFilePath: path.basename(absolute),
    readStartFile: (relative) => {
      try {
        return readFileSync(path.join(root, ...relative.split("/")));
      } catch {
        return undefined;
      }
    },
    isDirectory: (value) => {
      const candidate = value.startsWith("~/") ? path.join(homedir(), value.slice(2)) : path.resolve(root, value);
      try {
        return statSync(candidate).isDirectory();
      } catch {
        return false;
      }
    },
  });
}

/** The seats' declared start files (as written) that do not read: for a file whose other errors stop the compile. */
function unreadableDeclared(input: PolicyInput, read: (file: string) => Uint8Array | undefined): PolicyProblem[] {
  const problems: PolicyProblem[] = [];
  for (const [seat, declared] of Object.entries(input.seats ?? {})) {
    const files = declared?.start?.files;
    if (!Array.isArray(files)) continue;
    files.forEach((file, index) => {
      if (typeof file !== "string") return;
      const canonical = canonicalPath(file);
      if (!canonical.ok || canonical.path === "" || read(canonical.path) !== undefined) return;
      problems.push({
        rule: "teamfile.schema",
        at: ["seats", seat, "start", "files", index],
        part: "value",
        message: `start file '${file}' cannot be read, so it cannot be pinned`,
        fix: "create the file, or correct its repo-relative path",
      });
    });
  }
  return problems;
}
