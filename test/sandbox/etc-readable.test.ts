import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { chmod, chown, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { askKernel, createSeatReadable, type SeatAccess } from "../../src/sandbox/etc-readable.js";
import { seatUser } from "./fixture/real-seat.js";

/**
 * What the seat's uid may read and execute of the files a launch would copy into its /etc
 * (src/sandbox/etc-readable.ts): asked of the kernel as that uid, kept until the file or a
 * folder above it changes, and nothing readable when the check cannot run.
 */
let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "teamd-etc-readable-"));
  await chmod(dir, 0o755);
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const ids = { uid: 4242, gid: 4242 };

describe("createSeatReadable", () => {
  it("asks once per file and user, again only for a file (or a folder above it) that changed; a missing file is not asked", async () => {
    const asked: string[][] = [];
    const check = (paths: readonly string[]) => {
      asked.push([...paths]);
      return Promise.resolve(new Map<string, SeatAccess>(paths.map((p) => [p, { read: true, exec: p.endsWith("tool") }])));
    };
    const readable = createSeatReadable(check);
    const [a, tool, missing] = [join(dir, "a"), join(dir, "tool"), join(dir, "missing")];
    await writeFile(a, "a");
    await writeFile(tool, "t");
    const first = await readable([a, tool, missing], ids);
    expect(asked).toEqual([[a, tool]]);
    expect([...first.entries()]).toEqual([
      [a, { read: true, exec: false }],
      [tool, { read: true, exec: true }],
    ]);
    await readable([a, tool], ids);
    expect(asked).toHaveLength(1);
    // Another user is asked for itself.
    await readable([a], { uid: 4243, gid: 4243 });
    expect(asked[1]).toEqual([a]);
    // A change of mode (chmod moves the change time; so do chown and setfacl): asked again.
    await new Promise((resolve) => setTimeout(resolve, 20));
    await chmod(a, 0o600);
    await readable([a, tool], ids);
    expect(asked[2]).toEqual([a]);
    // A change to the folder above both: both asked again.
    await new Promise((resolve) => setTimeout(resolve, 20));
    await chmod(dir, 0o711);
    await readable([a, tool], ids);
    expect(asked[3]).toEqual([a, tool]);
  });

  it("a check that cannot run answers nothing readable, and keeps nothing", async () => {
    let calls = 0;
    const readable = createSeatReadable(() => {
      calls += 1;
      return Promise.reject(new Error("no bash"));
    });
    await writeFile(join(dir, "a"), "a");
    const answer = await readable([join(dir, "a")], ids);
    expect(answer.get(join(dir, "a"))).toEqual({ read: false, exec: false });
    await readable([join(dir, "a")], ids);
    expect(calls).toBe(2);
  });
});

describe.runIf(process.platform === "linux" && process.getuid?.() === 0)("askKernel as the seat's user", () => {
  it("answers access(2) as that uid: its group's bits, an owner's bits, a folder it cannot enter", async () => {
    const user = seatUser();
    const files = {
      open: join(dir, "open.conf"),
      groupDenied: join(dir, "group.conf"),
      rootOnly: join(dir, "root.conf"),
      tool: join(dir, "tool"),
      ownerExec: join(dir, "owner-exec"),
    };
    for (const path of Object.values(files)) await writeFile(path, "x\n");
    await chmod(files.open, 0o644);
    await chown(files.groupDenied, 0, user.gid);
    await chmod(files.groupDenied, 0o604);
    await chmod(files.rootOnly, 0o600);
    await chmod(files.tool, 0o755);
    await chmod(files.ownerExec, 0o744);
    const answers = await askKernel(Object.values(files), user);
    expect(Object.fromEntries(Object.entries(files).map(([name, path]) => [name, answers.get(path)]))).toEqual({
      open: { read: true, exec: false },
      groupDenied: { read: false, exec: false },
      rootOnly: { read: false, exec: false },
      tool: { read: true, exec: true },
      ownerExec: { read: true, exec: false },
    });
    await chmod(dir, 0o700);
    expect((await askKernel([files.open], user)).get(files.open)).toEqual({ read: false, exec: false });
  });
});
