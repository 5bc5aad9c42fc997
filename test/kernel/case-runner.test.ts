import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { kernelEval } from "../../daemon/commands/kernel-eval.js";
import { parseCaseFile } from "../../src/teamfile/case-format.js";
import { runCaseText } from "../../src/teamfile/case-runner.js";

/** The case runner reports mismatches (it can fail), and `teamd kernel eval` turns them into exit codes. */
const policy = { version: 1, team: "web", seats: { a: { capabilities: { write: { path: "docs/" } } } } };
const file = (cases: unknown[], extra: Record<string, unknown> = {}): string => JSON.stringify({ topic: "t", policy, now: 0, cases, ...extra });
const write = (paths: string[]): unknown => ({ seat: "a", capability: "write", effect: { paths } });

describe("the case runner", () => {
  it("passes a case whose decision and rule match", () => {
    const report = runCaseText("f", file([{ description: "ok", request: write(["docs/x"]), expect: { decision: "allow", authority: "a/direct/write/0" } }]));
    expect(report.results.map((r) => r.ok)).toEqual([true]);
  });

  it.each([
    { description: "wrong decision", expect: { decision: "refuse", rule: "scope.path" }, paths: ["docs/x"], why: /expected refuse, got allow/ },
    { description: "wrong rule", expect: { decision: "refuse", rule: "scope.mixed" }, paths: ["src/x"], why: /expected rule scope.mixed, got scope.path/ },
    { description: "wrong authority", expect: { decision: "allow", authority: "a/direct/write/1" }, paths: ["docs/x"], why: /expected authority/ },
  ])("fails a case with the $description", ({ expect: e, paths, why }) => {
    const report = runCaseText("f", file([{ description: "d", request: write(paths), expect: e }]));
    expect(report.results[0]?.ok).toBe(false);
    expect(report.results[0]?.why).toMatch(why);
  });

  it("fails a decision case whose policy does not load, saying why", () => {
    const report = runCaseText(
      "f",
      file([{ description: "d", policy: { version: 1, team: "web", leases: [] }, request: write(["docs/x"]), expect: { decision: "allow" } }]),
    );
    expect(report.results[0]?.why).toMatch(/did not load: teamfile.unsupported/);
  });

  it("matches a load case by any reported rule and, for YAML, its line", () => {
    const yaml = "version: 1\nteam: web\nleases: []\nenvelope: {}\n";
    const ok = runCaseText("f", file([{ description: "d", policy: yaml, expect: { decision: "refuse", rule: "teamfile.unsupported", line: 4 } }]));
    expect(ok.results[0]?.ok).toBe(true);
    const wrongLine = runCaseText("f", file([{ description: "d", policy: yaml, expect: { decision: "refuse", rule: "teamfile.unsupported", line: 9 } }]));
    expect(wrongLine.results[0]?.why).toMatch(/at line 9, got line 3, 4/);
    const loads = runCaseText("f", file([{ description: "d", expect: { decision: "refuse", rule: "vocab.unknown" } }]));
    expect(loads.results[0]?.why).toMatch(/expected refuse, got allow/);
  });

  it("refuses a fact this kernel does not read rather than ignoring it", () => {
    const report = runCaseText("f", file([{ description: "d", facts: { grants: [] }, request: write(["docs/x"]), expect: { decision: "allow" } }]));
    expect(report.results[0]?.ok).toBe(false);
    expect(report.results[0]?.why).toMatch(/facts.grants is not a fact this kernel reads/);
  });

  it.each([
    [{ authors: ["a"] }, /facts.authors must be an object/],
    [{ authors: { e1: [{ seat: "a" }] } }, /facts.authors.e1\[0\].run must be a non-empty string/],
    [{ gates: [{ id: "g", effectId: "e", signer: "a", authority: "x", result: "maybe" }] }, /result must be one of pass, refuse/],
    [{ outcomes: [{ effectId: "e", act: "merge", result: "done", extra: 1 }] }, /unknown field 'extra'/],
    [{ consumed: "g1" }, /facts.consumed must be a list/],
  ])("refuses ill-typed facts %j", (facts, message) => {
    const report = runCaseText("f", file([{ description: "d", facts, request: write(["docs/x"]), expect: { decision: "allow" } }]));
    expect(report.results[0]?.ok).toBe(false);
    expect(report.results[0]?.why).toMatch(message);
  });

  it.each([
    ["not JSON", "{", /not JSON/],
    ["no cases", JSON.stringify({ topic: "t", cases: [] }), /non-empty list/],
    ["no description", file([{ request: write(["x"]), expect: { decision: "allow" } }]), /every case has a description/],
    ["unknown rule", file([{ description: "d", request: write(["x"]), expect: { decision: "refuse", rule: "scope.nope" } }]), /not a rule id/],
    ["refusal without rule", file([{ description: "d", request: write(["x"]), expect: { decision: "refuse" } }]), /names its rule/],
    ["allow with rule", file([{ description: "d", request: write(["x"]), expect: { decision: "allow", rule: "scope.path" } }]), /names no rule/],
    ["unknown case key", file([{ description: "d", request: write(["x"]), expect: { decision: "allow" }, extra: 1 }]), /unknown key 'extra'/],
    ["no now", JSON.stringify({ topic: "t", policy, cases: [{ description: "d", request: write(["x"]), expect: { decision: "allow" } }] }), /no `now`/],
    ["bad now", file([{ description: "d", now: "yesterday", request: write(["x"]), expect: { decision: "allow" } }]), /ISO-8601/],
  ])("rejects a malformed case file: %s", (_name, text, message) => {
    const parsed = parseCaseFile(text);
    expect(Array.isArray(parsed)).toBe(true);
    expect((parsed as string[]).join("\n")).toMatch(message);
  });
});

describe("teamd kernel eval", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "teamd-kernel-eval-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  afterEach(() => vi.restoreAllMocks());
  const capture = (): { out: () => string; err: () => string } => {
    let out = "";
    let err = "";
    vi.spyOn(process.stdout, "write").mockImplementation((chunk) => ((out += String(chunk)), true));
    vi.spyOn(process.stderr, "write").mockImplementation((chunk) => ((err += String(chunk)), true));
    return { out: () => out, err: () => err };
  };
  const good = path.join(dir, "good.json");
  const bad = path.join(dir, "bad.json");
  writeFileSync(good, file([{ description: "docs is writable", request: write(["docs/x"]), expect: { decision: "allow" } }]));
  writeFileSync(bad, file([{ description: "docs-secret is writable (wrong on purpose)", request: write(["docs-secret/x"]), expect: { decision: "allow" } }]));

  it("exits 0 when every case matches", async () => {
    const io = capture();
    expect(await kernelEval([good], {})).toBe(0);
    expect(io.out()).toMatch(/1 cases in 1 file\(s\): 1 passed, 0 failed/);
  });

  it("prints each mismatch with the case's description and exits 1", async () => {
    const io = capture();
    expect(await kernelEval([good, bad], {})).toBe(1);
    expect(io.err()).toContain("FAIL " + bad + " case 1: docs-secret is writable (wrong on purpose)");
    expect(io.err()).toMatch(/actual {3}refuse scope.path/);
  });

  it("reports JSON for scripts", async () => {
    const io = capture();
    expect(await kernelEval([bad], { json: true })).toBe(1);
    const report = JSON.parse(io.out()) as { failed: number; mismatches: { description: string; actual: { rule: string } }[] };
    expect(report.failed).toBe(1);
    expect(report.mismatches[0]).toMatchObject({ description: "docs-secret is writable (wrong on purpose)", actual: { rule: "scope.path" } });
  });

  it("exits 1 for a file it cannot read as cases, and 2 when no file is named", async () => {
    const io = capture();
    expect(await kernelEval([path.join(dir, "missing.json")], {})).toBe(1);
    expect(io.err()).toMatch(/not a valid case file/);
    expect(await kernelEval([], {})).toBe(2);
  });
});
