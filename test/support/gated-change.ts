import { expect } from "vitest";
import type { TeamdHarness } from "./teamd-harness.js";

/**
 * A fresh change on seat/exec/NAME (one file, src/NAME.txt, off the trunk), reviewed and gated
 * by seat rev under the policy in force: ready for a merger. The team needs an executor `exec`
 * writing src/ and a verifier `rev` of another lab where the review mode is cross-lab.
 */
export async function gatedChange(h: TeamdHarness, name: string): Promise<void> {
  const pushed = await h.inSeat(
    "exec",
    `git fetch -q teamd && git reset -q --hard teamd/main && echo ${name} > src/${name}.txt && git add -A && git commit -qm ${name} && git push -q -f teamd HEAD:${name}`,
  );
  expect(pushed.code, pushed.stdout + pushed.stderr).toBe(0);
  expect((await h.shim("rev", "review", `seat/exec/${name}`, "--approve")).code).toBe(0);
  const gate = await h.shim("rev", "gate", `seat/exec/${name}`, "--pass");
  expect(gate.code, gate.stderr).toBe(0);
}
