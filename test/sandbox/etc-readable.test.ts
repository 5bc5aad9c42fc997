import { beforeEach, describe, expect, it } from "vitest";
import { chmod, chown, mkdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { askKernel, createSeatReadable, signature, type Answer } from "../../src/sandbox/etc-readable.js";
import { seatUser } from "./fixture/real-seat.js";
import { quietDirPerTest } from "../support/quiet-dir.js";

/**
 * What the seat's uid may read and execute of the files a launch would copy into its /etc
 * (src/sandbox/etc-readable.ts): asked of the kernel as that uid, kept until the file or a
 * folder above it changes, and nothing readable when the check cannot run.
 */
const testDir = quietDirPerTest("etc-readable");
let dir: string;
beforeEach(() => {
  dir = testDir();
});

const ids = { uid: 4242, gid: 4242 };

describe("createSeatReadable", () => {
  it("asks once per file and user, again only for a file (or a folder above it) that changed; a missing file is not asked", async () => {
    const asked: string[][] = [];
    const check = (paths: readonly string[]) => {
      asked.push([...paths]);
      return Promise.resolve(new Map<string, Answer>(paths.map((p) => [p, { read: true, exec: p.endsWith("tool") }])));
    };
    const readable = createSeatReadable(check);
    const [a, tool, missing] = [join(dir, "a"), join(dir, "tool"), join(dir, "missing")];
    await writeFile(a, "a");
    await writeFile(tool, "t");
    const first = await readable([a, tool, missing], ids);
    expect(asked).toEqual([[a, tool]]);
    expect([...first.keys()]).toEqual([a, tool]);
    expect(first.get(a)).toMatchObject({ read: true, exec: false, sig: signature(a) });
    expect(first.get(tool)).toMatchObject({ read: true, exec: true, sig: signature(tool) });
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

  it("a check that cannot run answers nothing, and keeps nothing", async () => {
    let calls = 0;
    const readable = createSeatReadable(() => {
      calls += 1;
      return Promise.reject(new Error("no bash"));
    });
    await writeFile(join(dir, "a"), "a");
    const answer = await readable([join(dir, "a")], ids);
    expect(answer.get(join(dir, "a"))).toBeUndefined();
    await readable([join(dir, "a")], ids);
    expect(calls).toBe(2);
  });

  it("a file or folder that changed while the kernel was asked gets no answer, and none is kept", async () => {
    const [a, b] = [join(dir, "a"), join(dir, "b")];
    await writeFile(a, "a");
    await writeFile(b, "b");
    let calls = 0;
    const readable = createSeatReadable(async (paths) => {
      calls += 1;
      // The host changes a under the check (a swap, a chmod): what was asked is not what is there.
      if (calls === 1) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        await chmod(a, 0o640);
      }
      return new Map(paths.map((p) => [p, { read: true, exec: false }]));
    });
    const first = await readable([a, b], ids);
    expect(first.has(a)).toBe(false);
    expect(first.get(b)).toMatchObject({ read: true });
    await readable([a, b], ids);
    expect(calls).toBe(2);
  });

  it("a folder reached through a link counts as itself: a change to it is seen through the link", async () => {
    const real = join(dir, "real");
    await mkdir(real);
    await writeFile(join(real, "f.conf"), "f");
    await symlink(real, join(dir, "link"));
    const path = join(dir, "link", "f.conf");
    let calls = 0;
    const readable = createSeatReadable((paths) => {
      calls += 1;
      return Promise.resolve(new Map(paths.map((p) => [p, { read: true, exec: false }])));
    });
    await readable([path], ids);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await chmod(real, 0o700);
    await readable([path], ids);
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
