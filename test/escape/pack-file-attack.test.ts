import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ShimService, type PushRequestSchema } from "../../src/gen/teamd/v1/shim_pb.js";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { createRpcClient } from "../../src/rpc/index.js";
import { appliedTeam } from "../support/applied-team.js";
import { daemonPid, quarantineLeft } from "../support/daemon-proc.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { type TeamdHarness } from "../support/teamd-harness.js";

/**
 * A pushed pack is a file the seat's git writes in the seat's tmp folder, which the daemon
 * reads (issue 26, src/effects/seat-pack-file.ts). The seat owns that file and its folder at
 * every moment: attacked from inside a real seat, with the real remote helper and a `git` first
 * on its PATH whose pack-objects writes the real pack, then puts something else under the
 * file's name before the helper tells the daemon the file is whole:
 *
 * - a symbolic link to the real pack (a daemon that followed it would land the push), and one
 *   to a host file the seat cannot read, at a path the seat's own /tmp mirrors with a decoy of
 *   the same size (what the helper measures is the decoy; what the daemon would read, the host's);
 * - a FIFO (an open that waits for a writer would hold one of the daemon's four fs threads);
 * - a hard link to the real pack (a second name, which could be a file the seat may not read).
 *
 * Each is refused push.pack, nothing lands, the quarantine is gone, and the same push with the
 * file left as written lands (the control). Rows: docs/enforcement.md, "seat git: pushed packs".
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const TEAM_FILE = teamFile(`  w1:
    lab: anthropic
    capabilities:
      read: ~
      write: { path: src/ }
    start:
      command: [sleep, "3600"]
  w2:
    lab: anthropic
    capabilities:
      read: ~
      write: { path: src/ }
    start:
      command: [sleep, "3600"]
`);

/** The daemon's refusal budget here (TEAMD_REFUSAL_BUDGET): 100 at once, one a minute after. */
const BUDGET = 100;

/** Python in the seat: the start of a pack file of objects written by hand, at $TEAMD_TMP/NAME. */
const PY_HEAD = `import sys, struct, hashlib, zlib, os
def hdr(t, size):
    b = [(t<<4) | (size & 15)]; size >>= 4
    while size:
        b[-1] |= 0x80; b.append(size & 0x7f); size >>= 7
    return bytes(b)
path = os.path.join(os.environ["TEAMD_TMP"], sys.argv[1])
`;

/** N REF_DELTAs, each declaring 64 MiB of delta data (zeros, ~64 KiB deflated): a bomb for the scan. */
const DELTAS = `${PY_HEAD}
n, dsize = int(sys.argv[2]), 64 * 1024 * 1024
z = zlib.compress(b"\\0" * dsize, 9)
obj = hdr(7, dsize) + b"\\x11" * 20 + z
body = b"PACK" + struct.pack(">II", 2, n) + obj * n
open(path, "wb").write(body + hashlib.sha1(body).digest())
print("size=%d" % (len(body) + 20))
`;

/** Four blobs of 63 MiB of zeros as stored deflate blocks whose payloads are holes (~1/16 of it on disk); a wrong checksum. */
const STORED_HOLES = `${PY_HEAD}
nobj, size = 4, 63 * 1024 * 1024
f = open(path, "wb")
f.write(b"PACK" + struct.pack(">II", 2, nobj))
for k in range(nobj):
    f.write(hdr(3, size) + b"\\x78\\x01")
    left = size
    while left:
        n = min(left, 65535); left -= n
        f.write(bytes([1 if left == 0 else 0]) + struct.pack("<HH", n, n ^ 0xFFFF))
        f.seek(n, 1)
    f.write(struct.pack(">I", ((size % 65521) << 16) | 1))
f.write(b"\\x01" * 20)
f.close()
print("size=%d" % os.stat(path).st_size)
`;

const CANARY = "TEAMD-CANARY-pack-file-7c1e";

/**
 * A `git` for the helper's PATH: its pack-objects writes the real pack to $TEAMD_TMP/real.pack,
 * then leaves under the pack file's name (its stdout's path) what MODE says.
 */
const FAKE_GIT = [
  "#!/bin/sh",
  'if [ "$1" = pack-objects ]; then',
  "  p=$(readlink /proc/$$/fd/1)",
  '  /usr/bin/git "$@" > "$TEAMD_TMP/real.pack" || exit 1',
  '  case "$MODE" in',
  '    copy) cat "$TEAMD_TMP/real.pack" > "$p" ;;',
  '    link) rm -f "$p"; ln -s "$TEAMD_TMP/real.pack" "$p" ;;',
  '    host) rm -f "$p"; mkdir -p "$(dirname "$SECRET")"; head -c "$SECRET_BYTES" /dev/zero > "$SECRET"; ln -s "$SECRET" "$p" ;;',
  '    hard) rm -f "$p"; ln "$TEAMD_TMP/real.pack" "$p" ;;',
  '    fifo) rm -f "$p"; mkfifo "$p" ;;',
  // Holes cost the seat nothing: no bytes written, no blocks.
  '    sparse) truncate -s "$SPARSE" "$p" ;;',
  `    header) printf 'PACK\\000\\000\\000\\002\\000\\000\\000\\001' > "$p"; truncate -s "$SPARSE" "$p" ;;`,
  '    tail) cat "$TEAMD_TMP/real.pack" > "$p"; truncate -s "$SPARSE" "$p" ;;',
  "  esac",
  "  exit 0",
  "fi",
  'exec /usr/bin/git "$@"',
].join("\n");

describe.runIf(process.platform === "linux")("escape: the seat's pack file", () => {
  let h: TeamdHarness;
  let secretDir: string;
  let secret: string;
  let start: string;

  beforeAll(async () => {
    h = await appliedTeam(
      "teamd-pack-file-",
      TEAM_FILE,
      { "README.md": "hello\n", "src/a.txt": "a\n" },
      { daemonEnv: { TEAMD_REFUSAL_BUDGET: `${BUDGET}/1` } },
    );
    await h.ok(["start", "--team", "proj"]);
    start = (await h.inSeat("w1", "git rev-parse HEAD")).stdout.trim();
    expect(start).toMatch(/^[0-9a-f]{40}$/);
    // A host file the seat may not read, at a path under the host's /tmp — which, inside the
    // seat, is the seat's own tmp folder, where the attacker puts a decoy by the same path.
    secretDir = mkdtempSync(join(tmpdir(), "teamd-pack-secret-"));
    secret = join(secretDir, "secret.pack");
    writeFileSync(secret, `${CANARY}\n`.repeat(64), { mode: 0o600 });
    chmodSync(secretDir, 0o700);
  }, 180_000);
  afterAll(async () => {
    await h?.cleanup();
    if (secretDir !== undefined) rmSync(secretDir, { recursive: true, force: true });
  });

  const refusals = async (rule: string) => (await h.records()).filter((r) => r.type === "refusal" && JSON.stringify(r).includes(`"${rule}"`)).length;

  /** A fresh commit under src/ pushed to BRANCH through the helper, its pack-objects the fake one in MODE. */
  const attack = (mode: string, branch: string, sparse = 0) =>
    h.inSeat(
      "w1",
      [
        "mkdir -p /tmp/evil-pack && cat > /tmp/evil-pack/git <<'EOS'",
        FAKE_GIT,
        "EOS",
        "chmod +x /tmp/evil-pack/git",
        `git checkout -q -B ${branch} ${start}`,
        `head -c 70000 /dev/urandom > src/${branch}.bin && git add src && git commit -qm ${branch}`,
        // The helper itself, as git runs it (git puts its own folder first on a helper's PATH).
        `printf 'push refs/heads/${branch}:refs/heads/${branch}\\n\\n' | MODE=${mode} SPARSE=${sparse} SECRET=${secret} SECRET_BYTES=${CANARY.length * 64 + 64} PATH=/tmp/evil-pack:$PATH git-remote-teamd teamd teamd::seat 2>&1`,
        // Whatever the attack left in the seat's tmp is the seat's own; only the helper's file must be gone.
        "echo left=$(ls -a $TEAMD_TMP | grep -c '^.teamd-pack-')",
      ].join("\n"),
    );

  it("control: the pack file as pack-objects wrote it lands, and the helper removes its file", async () => {
    const pushed = await attack("copy", "control");
    expect(pushed.stdout, pushed.stderr).toMatch(/^ok refs\/heads\/control$/m);
    expect(h.hubRef("refs/heads/seat/w1/control")).toBeDefined();
    expect(pushed.stdout).toMatch(/^left=0$/m);
  }, 120_000);

  it.each([
    ["a symbolic link to the real pack (followed, the push would land)", "link", /symbolic link/],
    ["a symbolic link to a host file the seat cannot read, its decoy in the seat's /tmp", "host", /symbolic link/],
    ["a FIFO (an open that waits for a writer would hold a daemon thread)", "fifo", /not a regular file/],
    ["a hard link to the real pack (a second name)", "hard", /2 names \(a hard link\)/],
  ])(
    "refuses a pack file that is %s: push.pack, nothing lands, nothing is left",
    async (_what, mode, reason) => {
      const before = await refusals("push.pack");
      const pushed = await attack(mode, `evil-${mode}`);
      const line = new RegExp(`^error refs/heads/evil-${mode} teamd: push\\.pack: .*${reason.source}`, "m");
      expect(pushed.stdout, pushed.stderr).toMatch(line);
      expect(pushed.stdout).toMatch(/^left=0$/m);
      expect(h.hubRef(`refs/heads/seat/w1/evil-${mode}`)).toBeUndefined();
      expect(await refusals("push.pack")).toBe(before + 1);
      expect(quarantineLeft(h)).toEqual([]);
      // The host's file was never read: its canary is nowhere the seat or the owner looks.
      expect(pushed.stdout + pushed.stderr).not.toContain(CANARY);
      expect(JSON.stringify(await h.records())).not.toContain(CANARY);
      expect(h.daemon?.stderr() ?? "").not.toContain(CANARY);
      expect(readFileSync(secret, "utf8")).toContain(CANARY);
    },
    120_000,
  );

  /** What the daemon process has written (wchar: to its files, the quarantine's copy among them). */
  const daemonWrote = () => Number(/^wchar: (\d+)/m.exec(readFileSync(`/proc/${daemonPid(h)}/io`, "utf8"))?.[1] ?? Number.NaN);

  it.each([
    ["256 MiB of holes, no pack header", "sparse", 256 * 1024 * 1024, /does not start with a pack header/],
    ["a pack header declaring one object, then 200 MiB of holes", "header", 200 * 1024 * 1024, /object 1 at offset 12 has type 0/],
    ["the real pack, then holes to 200 MiB", "tail", 200 * 1024 * 1024, /bytes after its \d+ objects/],
    ["4 GiB of holes, past the most a push may carry", "sparse", 4 * 1024 * 1024 * 1024, /pack exceeds 256 MiB/],
  ])(
    "refuses a pack file of %s where the scan meets it, the daemon copying a few MiB at most (found by an attack: it copied all 256 MiB)",
    async (_what, mode, sparse, reason) => {
      const before = daemonWrote();
      const pushed = await attack(mode, `holes-${mode}-${sparse}`, sparse);
      const wrote = daemonWrote() - before;
      expect(pushed.stdout, pushed.stderr).toMatch(new RegExp(`^error refs/heads/holes-${mode}-${sparse} teamd: push\\.pack: .*${reason.source}`, "m"));
      expect(h.hubRef(`refs/heads/seat/w1/holes-${mode}-${sparse}`)).toBeUndefined();
      expect(quarantineLeft(h)).toEqual([]);
      // The record, the quarantine's folder and the copy's first windows: never the file.
      expect(wrote).toBeLessThan(8 * 1024 * 1024);
    },
    120_000,
  );

  it("the daemon still serves the seat after them: the same push with the file as written lands", async () => {
    const pushed = await attack("copy", "after");
    expect(pushed.stdout, pushed.stderr).toMatch(/^ok refs\/heads\/after$/m);
    expect(h.hubRef("refs/heads/seat/w1/after")).toBeDefined();
  }, 120_000);

  /** A push over the seat socket whose header names a pack file: its parts as given. */
  async function rawPush(parts: readonly MessageInitShape<typeof PushRequestSchema>["part"][], seat = "w1"): Promise<{ rule?: string; reason?: string }> {
    const client = createRpcClient(ShimService, h.seatSocket(seat));
    async function* messages() {
      for (const part of parts) yield { part };
    }
    try {
      return await client.push(messages()).then(
        () => ({}),
        (error: { rule?: string; reason?: string }) => error,
      );
    } finally {
      client.close();
    }
  }
  const header = (id: string, extra: Record<string, unknown>) => ({
    case: "header" as const,
    value: { requestId: id, updates: [{ ref: `refs/heads/${id}`, newOid: start }], ...extra },
  });
  const NAME = ".teamd-pack-0123abcd-4567-89ab-cdef-0123456789ab.pack";

  it.each([
    ["a name that is not a pack file's (a path out of the folder)", { packFile: "../../hubs/proj.git/HEAD" }, "rpc.malformed", /named \.teamd-pack-UUID\.pack/],
    ["a pack file that is also streamed", { packFile: NAME, packStreamed: true }, "rpc.malformed", /not also streamed/],
    ["a pack file with a declared size", { packFile: NAME, packBytes: 10n }, "rpc.malformed", /declares no size/],
  ])(
    "refuses %s before anything is opened",
    async (_what, extra, rule, reason) => {
      const id = `raw-${rule}-${Object.keys(extra).join("-")}`;
      const refusal = await rawPush([header(id, extra), { case: "written", value: { bytes: 1n } }]);
      expect(refusal.rule, refusal.reason).toBe(rule);
      expect(refusal.reason).toMatch(reason);
      expect(h.hubRef(`refs/heads/seat/w1/${id}`)).toBeUndefined();
    },
    60_000,
  );

  it("refuses a push that names no ref update (answered OK before, nothing recorded: a free loop of the daemon's quota reads)", async () => {
    const empty = await rawPush([{ case: "header", value: { requestId: "raw-empty", updates: [] } }]);
    expect(empty.rule, empty.reason).toBe("rpc.malformed");
    expect(empty.reason).toMatch(/at least one ref update/);
  }, 60_000);

  it("refuses pack data after a pack file's header, and a pack file that is not in the seat's tmp folder", async () => {
    const data = await rawPush([header("raw-data", { packFile: NAME }), { case: "data", value: new Uint8Array(16) }]);
    expect(data.rule, data.reason).toBe("rpc.malformed");
    expect(data.reason).toMatch(/one header, then one PackWritten/);
    const missing = await rawPush([header("raw-missing", { packFile: NAME }), { case: "written", value: { bytes: 16n } }]);
    expect(missing.rule, missing.reason).toBe("push.pack");
    expect(missing.reason).toMatch(/no such file: TEAMD_TMP/);
    expect(quarantineLeft(h)).toEqual([]);
  }, 60_000);

  /** Runs SCRIPT (Python, PY_HEAD first) in SEAT to write $TEAMD_TMP/NAME; the file's size. */
  const writeInSeat = async (seat: string, script: string, name: string, arg = ""): Promise<number> => {
    const made = await h.inSeat(seat, `cat > /tmp/gen.py <<'EOS'\n${script}\nEOS\npython3 /tmp/gen.py ${name} ${arg}`);
    const size = Number(/size=(\d+)/.exec(made.stdout)?.[1]);
    expect(size, made.stdout + made.stderr).toBeGreaterThan(0);
    return size;
  };
  const fileName = (n: number) => `.teamd-pack-0123abcd-4567-89ab-cdef-${String(n).padStart(12, "0")}.pack`;
  const pushFile = (id: string, name: string, bytes: number, seat = "w1") =>
    rawPush(
      [
        { case: "header", value: { requestId: id, packFile: name, updates: [{ ref: `refs/heads/${id}`, newOid: start }] } },
        { case: "written", value: { bytes: BigInt(bytes) } },
      ],
      seat,
    );

  it("takes the file: a pack file pushed once is gone, and the same name pushed again is refused (found by an attack: one file pushed again and again cost the seat nothing)", async () => {
    const name = fileName(1);
    const made = await h.inSeat(
      "w1",
      `git rev-parse ${start} | git pack-objects --revs --stdout > "$TEAMD_TMP/${name}" && stat -c size=%s "$TEAMD_TMP/${name}"`,
    );
    const size = Number(/size=(\d+)/.exec(made.stdout)?.[1]);
    expect(size, made.stderr).toBeGreaterThan(0);
    expect(await pushFile("taken-once", name, size)).toEqual({});
    expect(h.hubRef("refs/heads/seat/w1/taken-once")).toBe(start);
    expect((await h.inSeat("w1", `ls -a "$TEAMD_TMP" | grep -c '^.teamd-pack-' || true`)).stdout.trim()).toBe("0");
    const again = await pushFile("taken-twice", name, size);
    expect(again.rule, again.reason).toBe("push.pack");
    expect(again.reason).toMatch(/no such file/);
  }, 60_000);

  it("holds what the scan inflates of a delta bomb in a pack file to the pack's total, and stops it when the seat hangs up: four pushes cut off leave the seat's git slots free (found by an attack)", async () => {
    // 64 MiB of delta data each, ~64 KiB of zlib: a total of 1 GiB is reached at the 17th.
    const names = [2, 3, 4, 5].map(fileName);
    const sizes: number[] = [];
    for (const name of names) sizes.push(await writeInSeat("w1", DELTAS, name, "64"));
    const one = await pushFile("delta-bomb", names[0] as string, sizes[0] as number);
    expect(one.rule, one.reason).toBe("push.object-size");
    expect(one.reason).toMatch(/data declare more than 1073741824 bytes in all \(by object 17 of 64\)/);
    // The three left, and a fourth made again, each pushed by a client killed 0.5 s in.
    sizes[0] = await writeInSeat("w1", DELTAS, names[0] as string, "64");
    const client = (name: string, size: number, id: string) => `
      const { createRpcClient } = await import(${JSON.stringify(join(process.cwd(), "dist/src/rpc/index.js"))});
      const { ShimService } = await import(${JSON.stringify(join(process.cwd(), "dist/src/gen/teamd/v1/shim_pb.js"))});
      const client = createRpcClient(ShimService, ${JSON.stringify(h.seatSocket("w1"))});
      async function* messages() {
        yield { part: { case: "header", value: { requestId: ${JSON.stringify(id)}, packFile: ${JSON.stringify(name)}, updates: [{ ref: "refs/heads/${id}", newOid: ${JSON.stringify(start)} }] } } };
        yield { part: { case: "written", value: { bytes: ${size}n } } };
      }
      await client.push(messages()).catch(() => undefined);`;
    const kids = names.map((name, i) =>
      spawn(process.execPath, ["--input-type=module", "-e", client(name, sizes[i] as number, `gone-${i}`)], { stdio: "ignore" }),
    );
    try {
      await new Promise((resolve) => setTimeout(resolve, 500));
    } finally {
      for (const kid of kids) kid.kill("SIGKILL");
    }
    await new Promise((resolve) => setTimeout(resolve, 1500));
    // Each would have inflated 1 GiB (~3 s of the daemon's CPU here, four on two cores); stopped, the seat's four slots are free.
    const fifth = await pushFile("fifth", fileName(6), 100);
    expect(fifth.rule, fifth.reason).toBe("push.pack");
    expect(fifth.reason).toMatch(/no such file/);
    expect(quarantineLeft(h)).toEqual([]);
  }, 120_000);

  it("charges a refused pack file to the refusal budget by its size: stored deflate blocks over holes (a 256 MiB pack on ~16 MiB of the seat's disk) halt the seat within a few pushes (found by an attack)", async () => {
    const name = fileName(7);
    let pushes = 0;
    let last: { rule?: string; reason?: string } = {};
    // 33 of the budget each (1 + 256 MiB / 8 MiB): the fourth finds it spent; one a push would take 100.
    for (; pushes < 8; pushes++) {
      const status = await h.json<{ seats: { seat: string; state: string }[] }>(["status", "--json"]);
      if (status.seats.find((x) => x.seat === "w2")?.state !== "running") break;
      const size = await writeInSeat("w2", STORED_HOLES, name);
      last = await pushFile(`holes-${pushes}`, name, size, "w2");
      expect(last.rule, last.reason).toBe("push.pack");
    }
    expect(pushes, last.reason).toBeLessThanOrEqual(Math.ceil(BUDGET / 33) + 1);
    for (let i = 0; i < 50; i++) {
      const status = await h.json<{ seats: { seat: string; state: string }[] }>(["status", "--json"]);
      if (status.seats.find((x) => x.seat === "w2")?.state === "halted: refusal budget") return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect.unreachable("the seat was not halted for its refusal budget");
  }, 180_000);
});
