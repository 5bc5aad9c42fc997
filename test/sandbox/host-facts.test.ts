import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { existsSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { mkdtemp, rm, writeFile, mkdir } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describeRoot, gatherHostFacts, reservedFacts } from "../../src/sandbox/host-facts.js";
import { buildReservedSet } from "../../src/objects/reserved-set.js";
import { compilePlan } from "../../src/sandbox/plan.js";

/** Reading the host for the plan: this machine's real /usr, /etc and node, and a temp seat socket. */
let dir: string;
let server: Server | undefined;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "teamd-facts-"));
});
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
  await rm(dir, { recursive: true, force: true });
});

async function socket(): Promise<string> {
  const path = join(dir, "seat.sock");
  server = createServer();
  await new Promise<void>((resolve) => server?.listen(path, () => resolve()));
  return path;
}

describe.runIf(process.platform === "linux")("gatherHostFacts", () => {
  it("describes this host: system paths, /etc with the folders it filters listed, node, the socket", async () => {
    const facts = await gatherHostFacts({ node: process.execPath, seatSocket: await socket() });
    if (!facts.ok) throw new Error(facts.refusal.reason);
    expect(facts.value.system.find((e) => e.path === "/usr")).toEqual({ path: "/usr", kind: "dir" });
    expect(facts.value.system.map((e) => e.path)).toEqual(["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"]);
    expect(facts.value.etc.some((e) => e.name === "passwd")).toBe(true);
    for (const folder of facts.value.etcListed) expect(facts.value.etc.find((e) => e.name === folder)?.kind).toBe("dir");
    expect(facts.value.seatSocket.path).toBe(join(dir, "seat.sock"));
  });

  it.runIf(process.getuid?.() === 0)(
    "leaves out an /etc entry whose name or link text is not UTF-8 (bound under a decoded name, it refused every seat)",
    async () => {
      const tag = `zz-teamd-facts-${process.pid}-`;
      const badName = Buffer.concat([Buffer.from(`/etc/${tag}`), Buffer.from([0xff, 0xfe]), Buffer.from(".conf")]);
      const badLink = Buffer.from(`/etc/${tag}link`);
      writeFileSync(badName, "x\n");
      symlinkSync(Buffer.concat([Buffer.from("target-"), Buffer.from([0xff])]), badLink);
      try {
        const facts = await gatherHostFacts({ node: process.execPath, seatSocket: await socket() });
        if (!facts.ok) throw new Error(facts.refusal.reason);
        const ours = facts.value.etc.filter((e) => e.name.startsWith(tag));
        expect(ours.map((e) => e.kind)).toEqual(["other", "other"]);
        // Every path the plan would name exists (the plan is the next test's; here its /etc entries).
        for (const entry of facts.value.etc.filter((e) => e.kind === "file" || e.kind === "dir"))
          expect(existsSync(`/etc/${entry.name}`), entry.name).toBe(true);
      } finally {
        rmSync(badName, { force: true });
        rmSync(badLink, { force: true });
      }
    },
  );

  it("compiles a plan from them", async () => {
    const set = await buildReservedSet([]);
    if (!set.ok) throw new Error(set.reason);
    const roots = await Promise.all(
      ["repo", "home", "tmp"].map(async (n) => {
        await mkdir(join(dir, n));
        const r = await describeRoot(join(dir, n), set.set);
        if (!r.ok) throw new Error(r.refusal.reason);
        return r.value;
      }),
    );
    const facts = await gatherHostFacts({ node: process.execPath, seatSocket: await socket() });
    if (!facts.ok) throw new Error(facts.refusal.reason);
    const [repository, home, tmp] = roots as [(typeof roots)[0], (typeof roots)[0], (typeof roots)[0]];
    const result = compilePlan({
      seat: { team: "t", seat: "s" },
      user: { uid: 1000, gid: 1000 },
      writable: { repository, home, tmp },
      readOnly: [],
      reserved: reservedFacts(set.set),
      host: facts.value,
      env: { allowlist: [], source: {}, declared: {} },
      limits: "none",
    });
    expect(result).toMatchObject({ decision: "plan" });
  });

  it("refuses a seat socket that is not a socket, and a root that is not a folder", async () => {
    await writeFile(join(dir, "plain"), "x");
    const facts = await gatherHostFacts({ node: process.execPath, seatSocket: join(dir, "plain") });
    expect(facts).toMatchObject({ ok: false, refusal: { rule: "containment.undecidable", reason: expect.stringMatching(/not a unix socket/) } });
    const set = await buildReservedSet([]);
    if (!set.ok) throw new Error(set.reason);
    expect(await describeRoot(join(dir, "plain"), set.set)).toMatchObject({ ok: false, refusal: { reason: expect.stringMatching(/not a folder/) } });
    expect(await describeRoot(join(dir, "missing"), set.set)).toMatchObject({ ok: false, refusal: { rule: "object.identity" } });
  });
});
