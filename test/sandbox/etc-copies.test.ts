import { beforeEach, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { chmod, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { COPY_COUNT, COPY_FD_ROOM, COPY_FILE_BYTES, COPY_TOTAL_BYTES, openEtcCopies } from "../../src/sandbox/etc-copies.js";
import { bwrapArgs } from "../../src/sandbox/bwrap-args.js";
import { signature } from "../../src/sandbox/etc-readable.js";
import type { MountOp, SandboxPlan } from "../../src/sandbox/plan-types.js";
import { quietDirPerTest } from "../support/quiet-dir.js";

/**
 * Which of a plan's /etc files the launcher gives as copies (src/sandbox/etc-copies.ts), on
 * real files: only regular files anyone may read, not through a link, not a FIFO (which would
 * hang the read), within the size, total and open-files bounds; and how bwrap-args.ts writes a
 * copy. What a seat can do to a copy is attacked in test/escape/etc-copies.test.ts.
 */
const testDir = quietDirPerTest("etc-copies");
let dir: string;
beforeEach(() => {
  dir = testDir();
});

const bind = (name: string, copyable = true): MountOp =>
  copyable ? { op: "ro-bind", src: join(dir, name), dest: `/etc/${name}`, copyable: true } : { op: "ro-bind", src: join(dir, name), dest: `/etc/${name}` };

function planOf(mounts: readonly MountOp[], limits: SandboxPlan["limits"] = {}): SandboxPlan {
  return { mounts, limits } as unknown as SandboxPlan;
}

describe("openEtcCopies", () => {
  it("copies a small file anyone may read, with its read and execute bits only; fds numbered from the first given", async () => {
    await writeFile(join(dir, "hosts"), "127.0.0.1 localhost\n");
    await chmod(join(dir, "hosts"), 0o644);
    await writeFile(join(dir, "tool"), "#!/bin/sh\n");
    await chmod(join(dir, "tool"), 0o6777);
    const copies = openEtcCopies(planOf([bind("hosts"), bind("tool")]), 9);
    try {
      expect([...copies.byDest.entries()]).toEqual([
        ["/etc/hosts", { fd: 9, perms: 0o444 }],
        ["/etc/tool", { fd: 10, perms: 0o555 }],
      ]);
      expect(copies.fds).toHaveLength(2);
    } finally {
      copies.close();
    }
    expect(copies.fds).toHaveLength(0);
  });

  it("leaves bound what not everyone may read, a link, a FIFO, a folder, a missing file, a bind not marked copyable", async () => {
    await writeFile(join(dir, "private"), "secret\n");
    await chmod(join(dir, "private"), 0o640);
    await writeFile(join(dir, "target"), "x\n");
    await symlink(join(dir, "target"), join(dir, "link"));
    execFileSync("mkfifo", [join(dir, "fifo")]);
    await chmod(join(dir, "fifo"), 0o644);
    execFileSync("mkdir", [join(dir, "folder")]);
    await writeFile(join(dir, "plain"), "x\n");
    const copies = openEtcCopies(planOf([bind("private"), bind("link"), bind("fifo"), bind("folder"), bind("missing"), bind("plain", false)]), 5);
    try {
      // A FIFO opened to read without O_NONBLOCK would have blocked here until a writer came.
      expect(copies.byDest.size).toBe(0);
      expect(copies.fds).toEqual([]);
    } finally {
      copies.close();
    }
  });

  it("bounds each file, the total and the count; under an open-files limit leaves room for bwrap", async () => {
    await writeFile(join(dir, "big"), Buffer.alloc(COPY_FILE_BYTES + 1, 97));
    await writeFile(join(dir, "edge"), Buffer.alloc(COPY_FILE_BYTES, 97));
    const big = openEtcCopies(planOf([bind("big"), bind("edge")]), 3);
    expect([...big.byDest.keys()]).toEqual(["/etc/edge"]);
    big.close();

    const names = Array.from({ length: Math.ceil(COPY_TOTAL_BYTES / COPY_FILE_BYTES) + 2 }, (_, i) => `f${i}`);
    for (const name of names) await writeFile(join(dir, name), Buffer.alloc(COPY_FILE_BYTES, 98));
    const total = openEtcCopies(planOf(names.map((n) => bind(n))), 3);
    expect(total.byDest.size).toBe(COPY_TOTAL_BYTES / COPY_FILE_BYTES);
    total.close();

    const many = Array.from({ length: COPY_COUNT + 5 }, (_, i) => `m${i}`);
    for (const name of many) await writeFile(join(dir, name), "m\n");
    const counted = openEtcCopies(planOf(many.map((n) => bind(n))), 3);
    expect(counted.byDest.size).toBe(COPY_COUNT);
    counted.close();

    const limited = openEtcCopies(
      planOf(
        many.map((n) => bind(n)),
        { openFiles: 100 },
      ),
      6,
    );
    expect(limited.byDest.size).toBe(100 - 6 - COPY_FD_ROOM);
    limited.close();
    const tight = openEtcCopies(
      planOf(
        many.map((n) => bind(n)),
        { openFiles: 64 },
      ),
      6,
    );
    expect(tight.byDest.size).toBe(0);
    tight.close();
    const none = openEtcCopies(
      planOf(
        many.slice(0, 3).map((n) => bind(n)),
        "none",
      ),
      6,
    );
    expect(none.byDest.size).toBe(3);
    none.close();
  });
});

describe("openEtcCopies as another uid", () => {
  it("copies only what the seat's uid was answered for, as it was then: a file swapped since is bound", async () => {
    for (const name of ["kept", "swapped", "denied", "unasked"]) {
      await writeFile(join(dir, name), `${name}\n`);
      await chmod(join(dir, name), 0o644);
    }
    const access = new Map(
      ["kept", "swapped", "denied"].map((name) => [join(dir, name), { read: name !== "denied", exec: false, sig: signature(join(dir, name)) as string }]),
    );
    // Changed after the answer (its mode here; an ACL or owner moves the same change time).
    await new Promise((resolve) => setTimeout(resolve, 20));
    await chmod(join(dir, "swapped"), 0o604);
    const copies = openEtcCopies(planOf([bind("kept"), bind("swapped"), bind("denied"), bind("unasked")]), 5, access);
    try {
      expect([...copies.byDest.keys()]).toEqual(["/etc/kept"]);
    } finally {
      copies.close();
    }
    // Replaced by another file under its name (as a config tool does, by rename): the folder
    // changed with it, and nothing under it is copied until the seat's uid is asked again.
    await writeFile(join(dir, "kept.new"), "other\n");
    await chmod(join(dir, "kept.new"), 0o644);
    execFileSync("mv", [join(dir, "kept.new"), join(dir, "kept")]);
    const after = openEtcCopies(planOf([bind("kept")]), 5, access);
    try {
      expect(after.byDest.size).toBe(0);
    } finally {
      after.close();
    }
  });
});

describe("bwrapArgs with copies", () => {
  const plan = {
    hostname: "seat",
    uid: 1000,
    gid: 1000,
    env: {},
    cwd: "/",
    mounts: [
      { op: "ro-bind", src: "/etc/hosts", dest: "/etc/hosts", copyable: true },
      { op: "ro-bind", src: "/etc/ssl", dest: "/etc/ssl" },
      { op: "ro-bind", src: "/etc/passwd", dest: "/etc/passwd", copyable: true },
    ],
  } as unknown as SandboxPlan;

  it("writes a copied bind as --perms P --file FD DEST and leaves the rest binds", () => {
    const copies = new Map([
      ["/etc/hosts", { fd: 6, perms: 0o444 }],
      // A dest given for a bind the plan did not mark copyable is not taken.
      ["/etc/ssl", { fd: 7, perms: 0o555 }],
    ]);
    const args = bwrapArgs(plan, ["true"], { copies });
    if (!args.ok) throw new Error("refused");
    const text = args.value.join(" ");
    expect(text).toContain("--perms 0444 --file 6 /etc/hosts");
    expect(text).toContain("--ro-bind /etc/ssl /etc/ssl");
    expect(text).toContain("--ro-bind /etc/passwd /etc/passwd");
    expect(text).not.toContain("--file 7");
    const plain = bwrapArgs(plan, ["true"]);
    if (!plain.ok) throw new Error("refused");
    expect(plain.value.join(" ")).toContain("--ro-bind /etc/hosts /etc/hosts");
  });
});
