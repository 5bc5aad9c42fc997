import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ShimService } from "../../src/gen/teamd/v1/shim_pb.js";
import { createRpcClient } from "../../src/rpc/index.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { leadsWriterTeamFile } from "../support/team-file.js";
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

// w leads the team (a lease issues only with a present leads, §9) and leases from its own write.
const writer = (writes: string) => leadsWriterTeamFile(writes);

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

  const lease = async (requestId: string, scope: string) => {
    const client = createRpcClient(ShimService, h.seatSocket("w"), { deadlineMs: 30_000 });
    try {
      const r = await client.leaseIssue({ requestId, recipient: "r", capability: "write", scope, ttlMs: 600_000n });
      return { id: r.lease?.leaseId ?? "", seq: r.seq };
    } finally {
      client.close();
    }
  };
  const revoke = async (requestId: string, leaseId: string) => {
    const client = createRpcClient(ShimService, h.seatSocket("w"), { deadlineMs: 30_000 });
    try {
      return (await client.leaseRevoke({ requestId, leaseId })).revoked;
    } finally {
      client.close();
    }
  };
  const count = async (type: string) => (await h.records()).filter((r) => r.type === type).length;

  beforeAll(async () => {
    h = await initTeam("teamd-retry-", { files: { "README.md": "hello\n", "src/a.txt": "a\n" } });
    writeFileSync(join(h.repo, "teamd.yaml"), writer("src/"));
    await h.ok(["apply", "--yes"]);
    await h.ok(["start", "--team", "proj"]);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("a lease issue and a lease revoke retried answer their records, after the authority changed too; other bytes under an id are refused", async () => {
    // Revoke: the retry is the revocation that happened (else: lease.revoked, already revoked).
    const doomed = await lease("retry-lease-0", "path=src/");
    expect(await revoke("retry-revoke-1", doomed.id)).toEqual([doomed.id]);
    const revocations = await count("revocation");
    expect(await revoke("retry-revoke-1", doomed.id)).toEqual([doomed.id]);
    expect(await count("revocation")).toBe(revocations);
    await expect(revoke("retry-revoke-2", doomed.id)).rejects.toThrow(/lease\.revoked/); // control: a new id is decided anew
    // Issue, then the owner takes src/ out of w's write: the retry is the lease issued, no new record.
    const first = await lease("retry-lease-1", "path=src/");
    expect(first.id).not.toBe("");
    writeFileSync(join(h.repo, "teamd.yaml"), writer("docs/"));
    await h.ok(["apply", "--yes"]);
    const leases = await count("lease");
    expect(await lease("retry-lease-1", "path=src/")).toEqual(first);
    expect(await count("lease")).toBe(leases);
    await expect(lease("retry-lease-1", "path=src/x/")).rejects.toThrow(/request\.replay-mismatch/);
    // An id a lease used is not a file write's either.
    await expect(write("retry-lease-1", "docs/a.txt", "a\n")).rejects.toThrow(/request\.replay-mismatch/);
    // Control: a new id for the same lease is decided by the kernel now, and refused.
    await expect(lease("retry-lease-2", "path=src/")).rejects.toThrow(/scope|lease/);
    expect(await count("lease")).toBe(leases);
    // Put w's write back for the next case.
    writeFileSync(join(h.repo, "teamd.yaml"), writer("src/"));
    await h.ok(["apply", "--yes"]);
  }, 120_000);

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
