import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { appliedTeam } from "../support/applied-team.js";
import { ensureSeatUser } from "../support/seat-user.js";
import type { TeamdHarness } from "../support/teamd-harness.js";

/**
 * Proves (docs/enforcement.md, "The seccomp filter" and "Seat uids"; issue 21, finding 2): two
 * seats of different labs, started by `teamd start` through a real daemon, cannot pass anything
 * through the kernel keyring — neither can make, find or read a key, and neither can list the
 * keys of its uid. Control: the same call, as the seat's own host uid on the host (no filter),
 * makes a key. (test/escape/seccomp.test.ts shows, on fixture seats, the channel itself working
 * between two seats of one uid when the filter and the mask are taken out.)
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();
const PYTHON = "/usr/bin/python3";

const TEAM_FILE = `version: 1
team: proj
declare:
  branches: [main]
  labs: [anthropic, openai]
seats:
  claude:
    lab: anthropic
    roles: [observer]
    start:
      command: [sleep, "3600"]
  codex:
    lab: openai
    roles: [observer]
    start:
      command: [sleep, "3600"]
`;

const PUT =
  `import ctypes,errno,sys; l=ctypes.CDLL(None,use_errno=True); l.syscall.restype=ctypes.c_long; p=sys.argv[1].encode(); ` +
  `k=l.syscall(248, b"user", b"teamd-cross-lab", p, len(p), -4); print("put", "ok" if k>=0 else errno.errorcode[ctypes.get_errno()])`;
const GET =
  `import ctypes,errno; l=ctypes.CDLL(None,use_errno=True); l.syscall.restype=ctypes.c_long; ` +
  `k=l.syscall(249, b"user", b"teamd-cross-lab", None, 0); print("get", "ok" if k>=0 else errno.errorcode[ctypes.get_errno()]); ` +
  `exec("try: print('list', len(open('/proc/keys').read()))\\nexcept OSError as e: print('list', errno.errorcode[e.errno])")`;

describe.runIf(process.platform === "linux" && existsSync(PYTHON))("escape: the kernel keyring between seats of different labs", () => {
  let h: TeamdHarness;
  beforeAll(async () => {
    h = await appliedTeam("teamd-keyring-", TEAM_FILE, undefined, { timeoutMs: 30_000 });
    await h.ok(["start", "--team", "proj"]);
  }, 60_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("a seat of one lab can neither leave a key nor find one; the other neither; no seat lists its uid's keys", async () => {
    const canary = `cross-lab-canary-${process.pid}`;
    const put = await h.exec("claude", [PYTHON, "-c", PUT, canary]);
    expect(put.stdout.trim(), put.stderr).toBe("put EPERM");
    const get = await h.exec("codex", [PYTHON, "-c", GET]);
    expect(get.stdout.trim().split("\n"), get.stderr).toEqual(["get EPERM", "list EACCES"]);
    // Control: the same call as the seat's own host uid, on the host and without the filter, makes a key.
    const status = await h.json<{ seats: Array<{ seat: string; uid: number }> }>(["status", "--json"]);
    const uid = status.seats.find((s) => s.seat === "claude")!.uid;
    if (asRoot) {
      const host = spawnSync(PYTHON, ["-c", PUT, `${canary}-control`], { uid, gid: uid, encoding: "utf8" });
      expect(host.stdout.trim(), host.stderr).toBe("put ok");
      // Leave nothing behind: clear that uid's user keyring (KEYCTL_CLEAR).
      spawnSync(PYTHON, ["-c", "import ctypes; ctypes.CDLL(None).syscall(250, 7, -4)"], { uid, gid: uid });
    }
  });
});
