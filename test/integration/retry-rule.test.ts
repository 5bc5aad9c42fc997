import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ShimService } from "../../src/gen/teamd/v1/shim_pb.js";
import { createRpcClient } from "../../src/rpc/index.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { initTeam, type TeamdHarness } from "../support/teamd-harness.js";

/**
 * One retry rule (issue 25; §15: "a byte-identical retry returns the recorded result, a
 * different payload is refused"), through a real daemon, a real seat's socket, a real hub and
 * the real ledger: a file write's request id, retried after the owner narrowed the seat's
 * write, answers the write that happened — it was decided again by the kernel first and
 * refused as a new act. The same id with other content is refused; a new id is decided anew.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const writer = (writes: string) =>
  teamFile(`  w:
    lab: anthropic
    capabilities:
      read: ~
      write: { path: ${writes} }
    start:
      command: [sleep, "3600"]
`);

describe.runIf(process.platform === "linux")("a retry answers what was recorded (§15)", () => {
  let h: TeamdHarness;
  const write = async (requestId: string, path: string, content: string): Promise<{ hubRef: string; commit: string }> => {
    const client = createRpcClient(ShimService, h.seatSocket("w"), { deadlineMs: 30_000 });
    const bytes = new TextEncoder().encode(content);
    async function* parts() {
      yield { part: { case: "header" as const, value: { requestId, path, branch: "", message: "retry", size: BigInt(bytes.byteLength) } } };
      yield { part: { case: "data" as const, value: bytes } };
    }
    try {
      const r = await client.fileWrite(parts());
      return { hubRef: r.hubRef, commit: r.commit };
    } finally {
      client.close();
    }
  };

  beforeAll(async () => {
    h = await initTeam("teamd-retry-", { files: { "README.md": "hello\n", "src/a.txt": "a\n" } });
    writeFileSync(join(h.repo, "teamd.yaml"), writer("src/"));
    await h.ok(["apply", "--yes"]);
    await h.ok(["start", "--team", "proj"]);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("a file write retried after the owner narrowed the write returns the recorded write; other content under the id is refused; a new id is decided anew", async () => {
    const first = await write("retry-write-1", "src/b.txt", "b\n");
    expect(first.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(h.hubGit("rev-parse", first.hubRef)).toBe(first.commit);
    // The owner narrows w's write to docs/: src/ is no longer within it.
    writeFileSync(join(h.repo, "teamd.yaml"), writer("docs/"));
    await h.ok(["apply", "--yes"]);
    const intents = async () => (await h.records()).filter((r) => r.type === "intent" && r.action === "file.write").length;
    const before = await intents();
    // The byte-identical retry: the write that happened, nothing new.
    expect(await write("retry-write-1", "src/b.txt", "b\n")).toEqual(first);
    expect(h.hubGit("rev-parse", first.hubRef)).toBe(first.commit);
    expect(await intents()).toBe(before);
    // The same id with other content: refused, whatever the authority says.
    await expect(write("retry-write-1", "src/b.txt", "other\n")).rejects.toThrow(/request\.replay-mismatch/);
    // Control: a new id for the same write is a new act, decided by the kernel now.
    await expect(write("retry-write-2", "src/b.txt", "b\n")).rejects.toThrow(/scope\.path/);
    expect(h.hubGit("rev-parse", first.hubRef)).toBe(first.commit);
  }, 120_000);
});
