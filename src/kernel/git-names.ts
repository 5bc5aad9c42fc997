/**
 * The names a seat hands the daemon for git to act on — a ref name, a repository path, a
 * commit message — judged by git's own rules before any intent is recorded (§15: an outcome
 * is unknown only when the effect may or may not have happened; an input git would refuse is
 * refused here, with a rule, and never reaches an effect). Pure: each answers undefined for a
 * name git accepts, or the reason it would not.
 *
 * The rules are git's, written from its documentation and its behaviour (check-ref-format;
 * verify_path with core.protectHFS and core.protectNTFS both on, as fsck judges every tree
 * entry whatever the platform), not from its code. Where git is looser than the daemon can
 * afford (a name longer than a checkout can create, a message longer than one argument may be),
 * the bound is the daemon's and says so.
 */

/** Bytes of one path component (NAME_MAX): a longer name is one no checkout can create. */
export const MAX_COMPONENT_BYTES = 255;
/** Bytes of a whole path (PATH_MAX). */
export const MAX_PATH_BYTES = 4096;
/** Bytes of a ref name: a loose ref is a file, and its lock file is the name plus `.lock`. */
export const MAX_REF_BYTES = 1024;
/** Bytes of a commit message the daemon passes to git as one argument (Linux takes at most 128 KiB per argument). */
export const MAX_MESSAGE_BYTES = 64 * 1024;

/**
 * The code points a terminal acts on or that reorder what it shows, beyond C0 and DEL: C1
 * (U+0080–U+009F: 8-bit CSI, OSC…), the bidirectional marks, embeddings, overrides and
 * isolates, the line and paragraph separators. git takes them in a ref name and prints the
 * name as it is (`git branch`, `git log --decorate`), outside any view teamd could escape.
 */
const TERMINAL_CONTROL = (c: number): boolean =>
  (c >= 0x80 && c <= 0x9f) || c === 0x061c || c === 0x200e || c === 0x200f || (c >= 0x2028 && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
/**
 * How many bytes `text` is in UTF-8, as TextEncoder writes it (a lone surrogate as U+FFFD's
 * three), counted without making the bytes: a push's 200,000 paths, each with its components,
 * were ~0.6 s of encoding on the daemon's one thread (found by an attack, round twelve).
 */
export function utf8ByteLength(text: string): number {
  let length = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) length += 1;
    else if (c < 0x800) length += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      length += 4;
      i += 1;
    } else length += 3;
  }
  return length;
}
const bytes = utf8ByteLength;

/**
 * Why git would not take `ref` as a full ref name (`git check-ref-format <ref>`, which
 * requires at least two components), or undefined. Rules: no component begins with `.` or
 * ends with `.lock`; no `..`; no control character, space, `~`, `^`, `:`, `?`, `*`, `[` or
 * `\` — and, the daemon's bound, no C1, bidirectional or line-separator control either; no leading or trailing `/`, no `//`; no trailing `.`; no `@{`; not `@`.
 */
export function refNameProblem(ref: string): string | undefined {
  if (ref.length === 0) return "the ref name is empty";
  if (bytes(ref) > MAX_REF_BYTES) return `the ref name is longer than ${MAX_REF_BYTES} bytes`;
  if (ref === "@") return "'@' is not a ref name";
  for (let i = 0; i < ref.length; i++) {
    const c = ref.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return "the ref name contains a control character";
    if (c === 0xfffd) return "the ref name is not valid UTF-8";
    if (TERMINAL_CONTROL(c))
      return "the ref name contains a C1, bidirectional or line-separator control character (git allows it, but git prints ref names raw to whoever lists them: the daemon's own bound)";
  }
  const bad = /[ ~^:?*[\\]/.exec(ref);
  if (bad !== null) return `the ref name contains '${bad[0]}', which git does not allow in a ref name`;
  if (ref.includes("..")) return "the ref name contains '..'";
  if (ref.includes("@{")) return "the ref name contains '@{'";
  if (ref.startsWith("/") || ref.endsWith("/")) return "the ref name begins or ends with '/'";
  if (ref.includes("//")) return "the ref name contains '//'";
  if (ref.endsWith(".")) return "the ref name ends with '.'";
  const components = ref.split("/");
  if (components.length < 2) return "the ref name has one component; a full ref name is refs/…";
  for (const component of components) {
    if (component.startsWith(".")) return `the ref name's component '${component}' begins with '.'`;
    if (component.endsWith(".lock")) return `the ref name's component '${component}' ends with '.lock'`;
    if (bytes(component) > MAX_COMPONENT_BYTES - ".lock".length)
      return `a component of the ref name is longer than ${MAX_COMPONENT_BYTES - ".lock".length} bytes`;
  }
  return undefined;
}

/**
 * Why `ref` cannot live beside the refs that exist (a loose ref is a file, so `a` and `a/b`
 * cannot both be refs: git refuses the second), or undefined. `existing` are full ref names;
 * `ref` itself among them is no conflict (an update, not a creation).
 */
export function refConflict(ref: string, existing: readonly string[]): string | undefined {
  for (const other of existing) {
    if (other === ref) continue;
    if (other.startsWith(`${ref}/`)) return `${ref} cannot be made: ${other} exists, and a ref cannot also be a folder of refs`;
    if (ref.startsWith(`${other}/`)) return `${ref} cannot be made: ${other} exists, and a ref cannot also be a folder of refs`;
  }
  return undefined;
}

/**
 * Code points HFS+ ignores when it compares names (git's list for `.git`): zero-width
 * joiners and marks, bidirectional embeddings and overrides, deprecated format characters and
 * the byte-order mark. `.g\u200cit` is `.git` on HFS+.
 */
function hfsIgnored(c: number): boolean {
  return (c >= 0x200c && c <= 0x200f) || (c >= 0x202a && c <= 0x202e) || (c >= 0x206a && c <= 0x206f) || c === 0xfeff;
}

/**
 * The code units `component` spends on `needle` from `start`, each character folded to upper
 * case on its own (so the dotless `ı`, which NTFS's case table upper-cases to `I`, counts as
 * `i`: folding more than git does only refuses more), skipping what `skip` says to; -1 when
 * the component does not spell it.
 */
function spelled(component: string, needle: string, start: number, skip: (c: number) => boolean): number {
  let i = start;
  for (const want of needle) {
    for (;;) {
      const c = component.codePointAt(i);
      if (c === undefined) return -1;
      const ch = String.fromCodePoint(c);
      i += ch.length;
      if (skip(c)) continue;
      if (ch.toUpperCase() !== want.toUpperCase()) return -1;
      break;
    }
  }
  return i;
}

const never = (): boolean => false;

/** Is this one path component `.git` on HFS+: `.git`, case folded, once the ignored code points are dropped? */
export function isHfsDotGit(component: string): boolean {
  const end = spelled(component, ".git", 0, hfsIgnored);
  if (end < 0) return false;
  for (const ch of component.slice(end)) if (!hfsIgnored(ch.codePointAt(0) as number)) return false;
  return true;
}

/**
 * Is this one path component `.git` on NTFS: `.git` or its short name `git~1`, in any case,
 * followed by nothing but spaces and dots (which NTFS strips) — or by `:`, which opens an
 * alternate data stream of the same file (`.git::$INDEX_ALLOCATION` is the folder itself).
 */
export function isNtfsDotGit(component: string): boolean {
  for (const needle of [".git", "git~1"]) {
    const end = spelled(component, needle, 0, never);
    if (end < 0) continue;
    for (let i = end; i < component.length; i++) {
      const c = component[i];
      if (c === ":") return true;
      if (c !== " " && c !== ".") return false;
    }
    return true;
  }
  return false;
}

/**
 * Why git would not take `path` as the path of a regular file in a tree (`verify_path` with
 * both protections on, and fsck's tree checks), or undefined. The path is repo-relative with
 * `/` separators: no empty, `.` or `..` component (so no leading, trailing or doubled `/`), no
 * component that is `.git` or an HFS+ or NTFS alias of it, no NUL or backslash (a separator on
 * Windows), and within the daemon's length bounds.
 */
export function gitPathProblem(path: string): string | undefined {
  if (path.length === 0) return "the path is empty";
  if (bytes(path) > MAX_PATH_BYTES) return `the path is longer than ${MAX_PATH_BYTES} bytes`;
  if (path.includes("\0")) return "the path contains a NUL byte";
  if (path.includes("\\")) return "the path contains a backslash, a separator on Windows";
  if (path.includes("\ufffd")) return "the path is not valid UTF-8";
  for (const component of path.split("/")) {
    if (component === "") return "the path has an empty component (a leading, trailing or doubled '/')";
    if (component === "." || component === "..") return `the path has a '${component}' component`;
    if (isHfsDotGit(component)) return `'${JSON.stringify(component).slice(1, -1)}' is .git on HFS+ (ignored code points, folded case)`;
    if (isNtfsDotGit(component)) return `'${component}' is .git on NTFS (a short name, trailing dots or spaces, or a stream)`;
    if (bytes(component) > MAX_COMPONENT_BYTES) return `a component of the path is longer than ${MAX_COMPONENT_BYTES} bytes`;
  }
  return undefined;
}

/**
 * Is this one path component `.gitmodules` as git's fsck would find it on HFS+ or NTFS:
 * `.gitmodules` case folded, with HFS+'s ignored code points dropped and NTFS's trailing dots,
 * spaces and stream suffix stripped, or one of its NTFS short names (`gitmod~N`, `gi7eba~N`)?
 * Folding more than git does only refuses more.
 */
export function isDotGitmodules(component: string): boolean {
  const end = spelled(component, ".gitmodules", 0, hfsIgnored);
  if (end >= 0) {
    const rest = [...component.slice(end)].filter((ch) => !hfsIgnored(ch.codePointAt(0) as number)).join("");
    if (/^[ .]*(?::.*)?$/.test(rest)) return true;
  }
  return /^(?:gitmod|gi7eba)~[1-9]/i.test(component);
}

/**
 * Is this one path component `.gitattributes` as git's fsck would find it on HFS+ or NTFS (as
 * isDotGitmodules; NTFS's short names `gitatt~N`, `gi7d29~N`)? Folding more than git does only
 * asks more.
 */
export function isDotGitattributes(component: string): boolean {
  const end = spelled(component, ".gitattributes", 0, hfsIgnored);
  if (end >= 0) {
    const rest = [...component.slice(end)].filter((ch) => !hfsIgnored(ch.codePointAt(0) as number)).join("");
    if (/^[ .]*(?::.*)?$/.test(rest)) return true;
  }
  return /^(?:gitatt|gi7d29)~[1-9]/i.test(component);
}

/** The longest line fsck lets a `.gitattributes` blob hold (git's ATTR_MAX_LINE_LENGTH). */
export const MAX_ATTRIBUTES_LINE_BYTES = 2048;

/**
 * Why git's fsck would refuse `content` at `path`, for the two files whose content fsck reads,
 * or undefined. A file write makes its blob and tree without index-pack, so what a push meets in
 * fsck is checked here: a `.gitmodules` (or an alias of it) anywhere is refused — its URLs and
 * paths are what submodule attacks ride (an option-shaped URL or path), and a push, where fsck
 * judges them, is the way to change it; a `.gitattributes` may hold no line over fsck's bound.
 */
export function gitMetaFileProblem(path: string, content: Uint8Array): string | undefined {
  const name = path.slice(path.lastIndexOf("/") + 1);
  if (isDotGitmodules(name))
    return `'${JSON.stringify(name).slice(1, -1)}' is .gitmodules (or an alias of it): file write does not take it; push it, where git's fsck checks its URLs and paths`;
  if (name.toLowerCase() === ".gitattributes") {
    let start = 0;
    for (let i = 0; i <= content.length; i++) {
      if (i === content.length || content[i] === 0x0a) {
        if (i - start > MAX_ATTRIBUTES_LINE_BYTES) return `a line of ${name} is ${i - start} bytes; git's fsck takes at most ${MAX_ATTRIBUTES_LINE_BYTES}`;
        start = i + 1;
      }
    }
  }
  return undefined;
}

/**
 * Why a pushed commit's raw text (its headers and message, as `git cat-file commit` gives it)
 * may not reach the hub, or undefined: it must be UTF-8, and hold no control a terminal acts on
 * but tab, newline and a CR before a newline — no ESC, no other C0, no DEL, no C1, no
 * bidirectional or line-separator control. git log plays a message as it is to whoever reads
 * the history (the owner, other seats), outside any view teamd could escape.
 */
export function commitTextProblem(raw: Uint8Array): string | undefined {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(raw);
  } catch {
    return "the commit's text is not UTF-8";
  }
  const i = controlAt(text);
  if (i === undefined) return undefined;
  const body = text.indexOf("\n\n");
  const lineStart = text.lastIndexOf("\n", i - 1) + 1;
  const where = body >= 0 && i > body ? "message" : `${text.slice(lineStart, text.indexOf(" ", lineStart))} line`;
  return `the commit's ${where} contains the control U+${text.charCodeAt(i).toString(16).padStart(4, "0").toUpperCase()}, which git log would play to whoever reads the history`;
}

/** Where `text` holds a control a terminal acts on, but tab, newline and a CR before a newline; undefined if nowhere. */
function controlAt(text: string): number | undefined {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x09 || c === 0x0a || (c === 0x0d && text.charCodeAt(i + 1) === 0x0a)) continue;
    if (c < 0x20 || c === 0x7f || TERMINAL_CONTROL(c)) return i;
  }
  return undefined;
}

/**
 * Why git could not be handed `message` as a commit message, or undefined: no NUL byte (git
 * cuts there), within one argument's bound, and — as for a pushed commit (commitTextProblem)
 * — no control a terminal acts on but tab and newline: the commit lands in history git log
 * plays as it is.
 */
export function commitMessageProblem(message: string): string | undefined {
  if (message.includes("\0")) return "the commit message contains a NUL byte";
  if (bytes(message) > MAX_MESSAGE_BYTES) return `the commit message is longer than ${MAX_MESSAGE_BYTES} bytes`;
  const at = controlAt(message);
  if (at !== undefined)
    return `the commit message contains the control U+${message.charCodeAt(at).toString(16).padStart(4, "0").toUpperCase()}, which git log would play to whoever reads the history`;
  return undefined;
}
