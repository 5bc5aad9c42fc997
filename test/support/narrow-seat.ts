import { execFileSync } from "node:child_process";
import { expect } from "vitest";
import { teamFile } from "./team-file.js";
import { type TeamdHarness } from "./teamd-harness.js";

/**
 * The escape suite's bounded seat for push attacks: `narrow` may read src/ and README.md and
 * write src/ only, so its pushes are replayed onto the real trunk (git-filter.ts), and the hub
 * holds docs/secret.md, which it may never read.
 */
export const NARROW_TEAM_FILE = teamFile(`  narrow:
    lab: anthropic
    capabilities:
      read: { path: [src/, README.md] }
      write: { path: src/ }
    start:
      command: [sleep, "3600"]
`);

/**
 * The escape suite's blind writer: `wo` may read src/ and README.md and write src/ and docs/, so
 * everything it sets under docs/ is set blind (src/kernel/blind-write.ts); the owner denies
 * write under docs/a/keep/ and docs/b/keep/.
 */
export const BLIND_WRITER_TEAM_FILE = teamFile(`  wo:
    lab: anthropic
    capabilities:
      read: { path: [src/, README.md] }
      write: { path: [src/, docs/] }
    start:
      command: [sleep, "3600"]
`).replace("seats:\n", "deny:\n  write: { path: [docs/a/keep/, docs/b/keep/] }\nseats:\n");

/** The repository those attacks start from: docs/secret.md holds `canary`. */
export const narrowRepoFiles = (canary: string): Record<string, string> => ({
  "README.md": "hello\n",
  "src/a.txt": "a\n",
  "docs/secret.md": `${canary}\n`,
});

/** The repository the blind writer's attacks start from: both canaries under docs/, and docs/a/keep/, which the owner's deny keeps. */
export const blindWriterRepoFiles = (canary: string, subCanary: string): Record<string, string> => ({
  ...narrowRepoFiles(canary),
  "docs/sub/s.md": `${subCanary}\n`,
  "docs/a/keep/k.md": "kept\n",
});

/**
 * The blind writer's attacks' closing control: the trunk is where it was, what the deny keeps
 * is whole, the hub passes fsck, and `wo` fetches nothing that holds `canaryTag`.
 */
export async function expectBlindWriterContained(h: TeamdHarness, main: string, canaryTag: string): Promise<void> {
  expect(h.hubRef("refs/heads/main")).toBe(main);
  expect(h.hubGit("cat-file", "blob", `${main}:docs/a/keep/k.md`)).toBe("kept");
  execFileSync("git", ["--git-dir", h.hub, "fsck", "--connectivity-only", "--no-dangling"], { stdio: "ignore" });
  const r = await h.inSeat("wo", `git fetch -q teamd 2>&1; git cat-file --batch-all-objects --batch | grep -c '${canaryTag}' || true`);
  expect(r.stdout.trim().split("\n").at(-1)).toBe("0");
}

/**
 * What a refusal says, without what differs by construction between two probes: object ids,
 * the pack's size, and each of `branches` (as X0, X1, …).
 */
export function refusalWords(text: string, ...branches: readonly string[]): string {
  let out = text
    .replace(/\b[0-9a-f]{40}\b/g, "<oid>")
    .replace(/^teamd: pushed \d+ bytes to the daemon$/m, "")
    .trim();
  for (const [i, branch] of branches.entries()) out = out.replaceAll(branch, `X${i}`);
  return out;
}
