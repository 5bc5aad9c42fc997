import { EXIT } from "../../src/rpc/cli-outcome.js";
import { type CaseFileReport, type CaseOutcome, runCaseFiles } from "../../src/teamfile/index.js";
import type { Expectation } from "../../src/teamfile/case-format.js";

/**
 * `teamd kernel eval FILE...`: run kernel case files (docs/kernel-cases.md) through the real
 * loader and the real `authorize`, print each mismatch with its case's description, and
 * return the exit code — 0 when every case matched, 1 when any did not or a file could not be
 * read as cases, 2 when no file was named. Thin: the runner lives in src/teamfile/.
 */
export async function kernelEval(files: string[], options: { json?: boolean }): Promise<number> {
  if (files.length === 0) {
    process.stderr.write("teamd kernel eval: name at least one case file\n");
    return EXIT.usage;
  }
  const reports = await runCaseFiles(files);
  const cases = reports.reduce((n, r) => n + r.results.length, 0);
  const failed = reports.flatMap((r) => r.results.map((result, index) => ({ file: r.file, index, result })).filter((x) => !x.result.ok));
  const broken = reports.filter((r) => r.errors.length > 0);
  if (options.json) {
    process.stdout.write(
      JSON.stringify({
        files: reports.length,
        cases,
        passed: cases - failed.length,
        failed: failed.length,
        mismatches: failed.map(({ file, index, result }) => ({
          file,
          case: index + 1,
          description: result.description,
          expected: result.expected,
          actual: result.actual,
          why: result.why,
        })),
        fileErrors: broken.map((r) => ({ file: r.file, errors: r.errors })),
      }) + "\n",
    );
  } else {
    const lines: string[] = [];
    for (const r of broken) lines.push(...describeBroken(r));
    for (const { file, index, result } of failed) {
      lines.push(`FAIL ${file} case ${index + 1}: ${result.description}`);
      lines.push(`  expected ${showExpected(result.expected)}; ${result.why ?? "mismatch"}`);
      if (result.actual !== undefined) lines.push(`  actual   ${showActual(result.actual)}`);
    }
    lines.push(
      `kernel eval: ${cases} cases in ${reports.length} file(s): ${cases - failed.length} passed, ${failed.length} failed${broken.length > 0 ? `, ${broken.length} file(s) not readable as cases` : ""}`,
    );
    (failed.length > 0 || broken.length > 0 ? process.stderr : process.stdout).write(lines.join("\n") + "\n");
  }
  return failed.length > 0 || broken.length > 0 ? EXIT.failure : EXIT.ok;
}

function describeBroken(report: CaseFileReport): string[] {
  return [`ERROR ${report.file}: not a valid case file`, ...report.errors.map((e) => `  ${e}`)];
}

function showExpected(e: Expectation): string {
  const detail = [e.rule, e.authority, e.actAs !== undefined ? `act-as ${e.actAs}` : undefined, e.line !== undefined ? `line ${e.line}` : undefined].filter(
    (x) => x !== undefined,
  );
  return detail.length > 0 ? `${e.decision} (${detail.join(", ")})` : e.decision;
}

function showActual(a: CaseOutcome): string {
  if (a.stage === "load") {
    if (a.decision === "allow") return "the policy loaded";
    const errors = (a.loadErrors ?? []).map((e) => `${e.rule}${e.line !== undefined ? ` line ${e.line}` : ""} at ${e.at}: ${e.message}`);
    return `the policy was refused at load:\n    ${errors.join("\n    ")}`;
  }
  if (a.decision === "allow") return `allow by ${a.authority}${a.actAs !== undefined ? ` with act-as ${a.actAs}` : ""}`;
  return `refuse ${a.rule}: ${a.reason ?? ""}`;
}
