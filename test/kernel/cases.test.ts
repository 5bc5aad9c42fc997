import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runCaseText } from "../../src/teamfile/case-runner.js";

/**
 * The suite's kernel cases (test/kernel/cases/*.json, one file per topic) run through the
 * same runner as `teamd kernel eval`: the real loader and the real `authorize`.
 */
const dir = fileURLToPath(new URL("./cases/", import.meta.url));
const files = readdirSync(dir)
  .filter((f) => f.endsWith(".json"))
  .sort();

describe("kernel case files", () => {
  it("exist, one per topic", () => {
    expect(files.length).toBeGreaterThanOrEqual(8);
  });
  for (const file of files) {
    const report = runCaseText(file, readFileSync(path.join(dir, file), "utf8"));
    describe(`${file}: ${report.topic ?? "(unreadable)"}`, () => {
      it("is a valid case file", () => {
        expect(report.errors).toEqual([]);
      });
      report.results.forEach((result, index) => {
        it(`${index + 1}. ${result.description}`, () => {
          expect(result.ok, `${result.why ?? ""}\n${JSON.stringify(result.actual, null, 2)}`).toBe(true);
        });
      });
    });
  }
});
