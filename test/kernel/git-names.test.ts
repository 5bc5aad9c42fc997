import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  commitMessageProblem,
  commitTextProblem,
  gitMetaFileProblem,
  gitPathProblem,
  isDotGitmodules,
  isHfsDotGit,
  isNtfsDotGit,
  MAX_MESSAGE_BYTES,
  refConflict,
  refNameProblem,
  utf8ByteLength,
} from "../../src/kernel/git-names.js";
import { noteRule } from "../../src/kernel/rules.js";
import { destination } from "../../src/kernel/seat-refs.js";

/**
 * The names a seat hands the daemon for git (src/kernel/git-names.ts), as tables: each is
 * judged by git's rules before any intent, so git never refuses it inside an effect (where a
 * refusal would be recorded as an unknown outcome, issue 20). test/effects/git-names-agree.test.ts
 * checks the same names against the git on this machine.
 */
const refCases: { ref: string; ok: boolean; why?: RegExp }[] = [
  { ref: "refs/heads/main", ok: true },
  { ref: "refs/heads/seat/w1/feature/x-1_2", ok: true },
  { ref: "refs/heads/ünïcode", ok: true },
  { ref: "refs/heads/a.b", ok: true },
  { ref: "refs/heads/a@b", ok: true },
  { ref: "refs/heads/a..b", ok: false, why: /'\.\.'/ },
  { ref: "refs/heads/a b", ok: false, why: /' '/ },
  { ref: "refs/heads/a\tb", ok: false, why: /control/ },
  // git takes these; the daemon does not (git prints ref names raw to whoever lists them).
  { ref: "refs/heads/b\u009b6n", ok: false, why: /C1, bidirectional/ },
  { ref: "refs/heads/x\u009d52;c;eA==\u009c", ok: false, why: /C1, bidirectional/ },
  { ref: "refs/heads/fix-\u202egnp.exe", ok: false, why: /C1, bidirectional/ },
  { ref: "refs/heads/a\u2028b", ok: false, why: /C1, bidirectional/ },
  { ref: "refs/heads/a\u2066b", ok: false, why: /C1, bidirectional/ },
  { ref: "refs/heads/\u00a0nbsp-\u00e9", ok: true },
  { ref: "refs/heads/a\u0001b", ok: false, why: /control/ },
  { ref: "refs/heads/a\u007fb", ok: false, why: /control/ },
  { ref: "refs/heads/a~1", ok: false, why: /'~'/ },
  { ref: "refs/heads/a^", ok: false, why: /'\^'/ },
  { ref: "refs/heads/a:b", ok: false, why: /':'/ },
  { ref: "refs/heads/a?", ok: false, why: /'\?'/ },
  { ref: "refs/heads/a*", ok: false, why: /'\*'/ },
  { ref: "refs/heads/a[b", ok: false, why: /'\['/ },
  { ref: "refs/heads/a\\b", ok: false, why: /'\\'/ },
  { ref: "/refs/heads/a", ok: false, why: /begins or ends with '\/'/ },
  { ref: "refs/heads/a/", ok: false, why: /begins or ends with '\/'/ },
  { ref: "refs/heads//a", ok: false, why: /'\/\/'/ },
  { ref: "refs/heads/a.", ok: false, why: /ends with '\.'/ },
  { ref: "refs/heads/.a", ok: false, why: /begins with '\.'/ },
  { ref: "refs/heads/a/.b/c", ok: false, why: /begins with '\.'/ },
  { ref: "refs/heads/a.lock", ok: false, why: /'\.lock'/ },
  { ref: "refs/heads/a.lock/b", ok: false, why: /'\.lock'/ },
  { ref: "refs/heads/a@{1}", ok: false, why: /'@\{'/ },
  { ref: "@", ok: false, why: /'@'/ },
  { ref: "main", ok: false, why: /one component/ },
  { ref: "", ok: false, why: /empty/ },
  { ref: `refs/heads/${"x".repeat(251)}`, ok: false, why: /longer than 250 bytes/ },
  { ref: `refs/heads/${"x/".repeat(600)}x`, ok: false, why: /longer than 1024 bytes/ },
  { ref: "refs/heads/\ufffd", ok: false, why: /UTF-8/ },
];

describe("refNameProblem (git check-ref-format)", () => {
  it.each(refCases)("$ref", ({ ref, ok, why }) => {
    const problem = refNameProblem(ref);
    if (ok) expect(problem).toBeUndefined();
    else expect(problem).toMatch(why as RegExp);
  });
});

describe("refConflict (a ref cannot also be a folder of refs)", () => {
  const existing = ["refs/heads/main", "refs/heads/seat/w1/a/b", "refs/heads/seat/w1/c"];
  it.each([
    { ref: "refs/heads/seat/w1/a", conflict: true },
    { ref: "refs/heads/seat/w1/c/d", conflict: true },
    { ref: "refs/heads/seat/w1/c", conflict: false },
    { ref: "refs/heads/seat/w1/ab", conflict: false },
    { ref: "refs/heads/seat/w1/a/b2", conflict: false },
    { ref: "refs/heads/main2", conflict: false },
  ])("$ref", ({ ref, conflict }) => {
    expect(refConflict(ref, existing) !== undefined).toBe(conflict);
  });
});

/** `.git` as HFS+ sees it: git's ignorable code points anywhere inside, case folded. */
const hfsAliases = [
  ".git",
  ".GIT",
  ".Git",
  ".g\u200cit",
  ".gi\u200dt",
  "\u200e.git",
  ".git\u200f",
  ".g\u202ait",
  ".gi\u202et",
  ".\u206agit",
  ".git\u206f",
  "\ufeff.git",
  ".g\u200c\u200di\ufefft",
  ".gıt",
];
const notHfs = [".gitx", ".git~1", "git", ".g\u00e9t", ".g\u200bit" /* U+200B is not ignored */, ".gi\u2060t" /* U+2060 neither */, "x.git", ".gitmodules"];
/** `.git` as NTFS sees it: the short name, trailing dots and spaces, a stream, any case. */
const ntfsAliases = [
  ".git",
  ".GIT",
  "git~1",
  "GIT~1",
  "Git~1",
  ".git.",
  ".git ",
  ".git. .",
  "git~1.",
  ".git:",
  ".git::$INDEX_ALLOCATION",
  "git~1::$INDEX_ALLOCATION",
  ".git:stream",
  ".gıt",
];
const notNtfs = ["git~2", ".git~1", ".gitx", "git~1x", ".git.x", "git", "~1", ".g it"];

describe("the aliases of .git", () => {
  it.each(hfsAliases)("HFS+: %j is .git", (name) => expect(isHfsDotGit(name)).toBe(true));
  it.each(notHfs)("HFS+: %j is not .git", (name) => expect(isHfsDotGit(name)).toBe(false));
  it.each(ntfsAliases)("NTFS: %j is .git", (name) => expect(isNtfsDotGit(name)).toBe(true));
  it.each(notNtfs)("NTFS: %j is not .git", (name) => expect(isNtfsDotGit(name)).toBe(false));
});

const pathCases: { path: string; ok: boolean; why?: RegExp }[] = [
  { path: "src/a.txt", ok: true },
  { path: "src/.gitignore", ok: true },
  { path: ".gitmodules", ok: true },
  { path: "src/..a/b", ok: true },
  { path: "src/.x", ok: true },
  { path: "src/git~2/x", ok: true },
  { path: "src/\u00e9t\u00e9.md", ok: true },
  { path: "src/.g\u200cit/config", ok: false, why: /HFS\+/ },
  { path: "\ufeff.git/hooks/pre-commit", ok: false, why: /HFS\+/ },
  { path: "src/.GIT\u200d", ok: false, why: /HFS\+/ },
  { path: "src/git~1/config", ok: false, why: /NTFS/ },
  { path: "src/GIT~1/config", ok: false, why: /NTFS/ },
  { path: "src/.git./config", ok: false, why: /NTFS/ },
  { path: "src/.git /config", ok: false, why: /NTFS/ },
  { path: "src/.git::$INDEX_ALLOCATION/config", ok: false, why: /NTFS/ },
  { path: ".git/config", ok: false, why: /\.git/ },
  { path: "a/.Git", ok: false, why: /\.git/ },
  { path: "a//b", ok: false, why: /empty component/ },
  { path: "/a", ok: false, why: /empty component/ },
  { path: "a/", ok: false, why: /empty component/ },
  { path: "a/./b", ok: false, why: /'\.' component/ },
  { path: "a/../b", ok: false, why: /'\.\.' component/ },
  { path: "..", ok: false, why: /'\.\.' component/ },
  { path: "a\\b", ok: false, why: /backslash/ },
  { path: "a\0b", ok: false, why: /NUL/ },
  { path: "", ok: false, why: /empty/ },
  { path: `src/${"x".repeat(256)}`, ok: false, why: /longer than 255 bytes/ },
  { path: `src/${"\u00e9".repeat(128)}`, ok: false, why: /longer than 255 bytes/ },
  { path: "x/".repeat(2100) + "x", ok: false, why: /longer than 4096 bytes/ },
  { path: "src/\ufffd", ok: false, why: /UTF-8/ },
];

describe("gitPathProblem (git's verify_path, HFS+ and NTFS protections on)", () => {
  it.each(pathCases)("$path", ({ path, ok, why }) => {
    const problem = gitPathProblem(path);
    if (ok) expect(problem).toBeUndefined();
    else expect(problem).toMatch(why as RegExp);
  });
});

describe("what fsck reads of .gitmodules and .gitattributes (file write makes no pack for fsck to judge)", () => {
  it.each([
    ".gitmodules",
    ".GitModules",
    ".git\u200cmodules",
    "\ufeff.gitmodules",
    ".gitmodules.",
    ".gitmodules  ",
    ".gitmodules::$DATA",
    "GITMOD~1",
    "gi7eba~4",
  ])("%j is .gitmodules", (name) => expect(isDotGitmodules(name)).toBe(true));
  it.each([".gitmodule", "gitmodules", ".gitmodules.txt", ".gitmodulesx", "gitmod~0", "xgitmod~1", ".gitattributes"])("%j is not", (name) =>
    expect(isDotGitmodules(name)).toBe(false),
  );
  const bytes = (text: string) => new TextEncoder().encode(text);
  it.each([
    ["a .gitmodules at the root", ".gitmodules", "", /is \.gitmodules/],
    ["a .gitmodules in a folder", "src/vendor/.gitmodules", "", /is \.gitmodules/],
    ["an alias of it", "src/GITMOD~1", "", /is \.gitmodules/],
    ["a .gitattributes line over 2048 bytes", "src/.gitattributes", `*.c text\n${"x".repeat(2049)}\n`, /2049 bytes; git's fsck takes at most 2048/],
    ["its last line, without a newline", ".gitattributes", "y".repeat(3000), /3000 bytes/],
  ])("refuses %s", (_what, path, content, reason) => expect(gitMetaFileProblem(path, bytes(content))).toMatch(reason));
  it.each([
    ["a .gitattributes of short lines", ".gitattributes", `*.c text\n${"x".repeat(2048)}\n`],
    ["any other file, however long its lines", "src/a.txt", "z".repeat(5000)],
  ])("takes %s", (_what, path, content) => expect(gitMetaFileProblem(path, bytes(content))).toBeUndefined());
});

describe("commitMessageProblem", () => {
  it.each([
    { message: "", ok: true },
    { message: "fix: a thing\n\nwith a body", ok: true },
    { message: "a\0b", ok: false },
    { message: "x".repeat(MAX_MESSAGE_BYTES), ok: true },
    { message: "x".repeat(MAX_MESSAGE_BYTES + 1), ok: false },
    { message: "tabs\tand\r\nCRLF, é, 漢字, 🙂", ok: true },
    { message: "x\u001b]52;c;eA==\u0007", ok: false },
    { message: "hidden\rshown", ok: false },
    { message: "csi \u009b2J", ok: false },
    { message: "rtl \u202e", ok: false },
    { message: "bell \u0007", ok: false },
  ])("%#", ({ message, ok }) => {
    expect(commitMessageProblem(message) === undefined).toBe(ok);
  });
});

describe("commitTextProblem (a pushed commit's raw text)", () => {
  const commit = (author: string, message: string) =>
    new TextEncoder().encode(`tree ${"a".repeat(40)}\nauthor ${author} <a@b> 1700000000 +0000\ncommitter c <c@d> 1700000000 +0000\n\n${message}`);
  it("takes UTF-8 text with tabs, newlines and CRLF", () => {
    expect(commitTextProblem(commit("Ann Ünïcode", "fix\r\n\n\tbody 漢字\n"))).toBeUndefined();
  });
  it.each([
    ["ESC in the message", commit("a", "x\u001b]52;c;eA==\u0007"), /message contains the control U\+001B/],
    ["a lone CR in the message", commit("a", "safe\rrm -rf ~"), /message contains the control U\+000D/],
    ["C1 in the message", commit("a", "\u009b2J"), /U\+009B/],
    ["a bidirectional override", commit("a", "\u202eevil"), /U\+202E/],
    ["ESC in the author", commit("a\u001b[2K", "m"), /author line contains the control U\+001B/],
  ])("refuses %s", (_what, raw, why) => {
    expect(commitTextProblem(raw)).toMatch(why);
  });
  it("refuses text that is not UTF-8 (a Latin-1 0x9B is CSI to a Latin-1 terminal)", () => {
    const raw = Buffer.concat([Buffer.from(commit("a", "x")), Buffer.from([0x9b, 0x32, 0x4a])]);
    expect(commitTextProblem(raw)).toMatch(/not UTF-8/);
  });
});

describe("destination refuses a name git would not take, before any intent", () => {
  it.each([
    { ref: "refs/heads/a..b", rule: "git.ref-name" },
    { ref: "refs/heads/x.lock", rule: "git.ref-name" },
    { ref: "refs/heads/seat/alice/", rule: "git.ref-name" },
    { ref: "refs/heads/seat/alice/a b", rule: "git.ref-name" },
    { ref: "refs/heads/@{u}", rule: "git.ref-name" },
    { ref: "refs/heads/ok", rule: undefined },
  ])("$ref", ({ ref, rule }) => {
    const got = destination("alice", ref, "refs/heads/main");
    if (rule === undefined) expect(got).toEqual({ hubRef: "refs/heads/seat/alice/ok" });
    else expect(got).toMatchObject({ decision: "refuse", rule });
  });
});

describe("noteRule (a refused outcome's note names its rule)", () => {
  it.each([
    { note: "git.ref-busy: refs/heads/x stayed locked", rule: "git.ref-busy" },
    { note: "push.stale: moved", rule: "push.stale" },
    { note: "no.such-rule: x", rule: undefined },
    { note: "the effect failed", rule: undefined },
    { note: "", rule: undefined },
  ])("$note", ({ note, rule }) => {
    expect(noteRule(note)?.rule).toBe(rule);
  });
});

describe("utf8ByteLength", () => {
  it("counts as TextEncoder writes: every string, lone surrogates included (property)", () => {
    const encoder = new TextEncoder();
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: "binary" }),
          fc.string({ unit: "grapheme" }),
          fc.string({ unit: fc.integer({ min: 0xd7f0, max: 0xe010 }).map((c) => String.fromCharCode(c)) }),
        ),
        (text) => {
          expect(utf8ByteLength(text)).toBe(encoder.encode(text).byteLength);
        },
      ),
      { numRuns: 2000 },
    );
  });
});
