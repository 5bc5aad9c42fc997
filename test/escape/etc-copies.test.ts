import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { chmod, chown, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createRealSeat, type RealSeat } from "../sandbox/fixture/real-seat.js";
import { quietDirPerTest } from "../support/quiet-dir.js";
import type { MountOp, SandboxPlan } from "../../src/sandbox/plan-types.js";

/**
 * Proves (docs/enforcement.md, the seat's /etc): the /etc files a pipes launch gives as copies
 * rather than binds (src/sandbox/etc-copies.ts, issue 26) are what the seat could read through
 * the bind and no more, from inside a real seat: the same content, read-only however the seat
 * tries (write, chmod, rename, remove, a link over it), no fd of the daemon's left in the seat,
 * and a file not everyone may read is not copied (it stays a bind, which the kernel checks at
 * the seat's uid). Control: the same seat with those binds left as binds sees them as mounts.
 */
let seat: RealSeat;
let files: string;
// The files under /var/tmp, not the seat's /tmp folder: a copy is made only while the file and
// every folder above it are as the seat's uid was answered for, and /tmp changes all the time
// under a parallel suite (test/support/quiet-dir.ts).
const testDir = quietDirPerTest("escape-etc-copies");
beforeEach(async () => {
  seat = await createRealSeat();
  files = testDir();
  await writeFile(join(files, "public.conf"), "public-etc-content\n");
  await chmod(join(files, "public.conf"), 0o644);
  await writeFile(join(files, "tool"), "#!/bin/sh\necho tool-ran\n");
  await chmod(join(files, "tool"), 0o4755);
  await writeFile(join(files, "private.conf"), "PRIVATE-ETC-CANARY\n");
  await chmod(join(files, "private.conf"), 0o600);
});
afterEach(async () => {
  await seat.cleanup();
});

const sh = (script: string) => ["/bin/sh", "-c", script];

async function planWith(copyable: boolean): Promise<SandboxPlan> {
  const plan = await seat.plan();
  const extra: MountOp[] = ["public.conf", "tool", "private.conf"].map((name) =>
    copyable
      ? { op: "ro-bind", src: join(files, name), dest: `/etc/zz-${name}`, copyable: true }
      : { op: "ro-bind", src: join(files, name), dest: `/etc/zz-${name}` },
  );
  // Before the root is made read-only (the plan's last op), as etc-filter.ts's binds are.
  const last = plan.mounts.length - 1;
  return {
    ...plan,
    mounts: [...plan.mounts.slice(0, last), ...extra, ...plan.mounts.slice(last)],
    sources: [...plan.sources, ...extra.map((op) => (op as { src: string }).src)],
  };
}

const mounted = (mountinfo: string, path: string) => mountinfo.split("\n").some((line) => line.split(" ")[4] === path);

describe.runIf(process.platform === "linux")("escape: the seat's /etc copies", () => {
  it("a copy is the file's content, read-only whatever the seat tries, not a mount; the private file is a bind, not a copy", async () => {
    const script = [
      "cat /etc/zz-public.conf",
      "stat -c 'mode=%a' /etc/zz-public.conf /etc/zz-tool",
      "/etc/zz-tool",
      "echo pwn > /etc/zz-public.conf; echo write=$?",
      "chmod 666 /etc/zz-public.conf; echo chmod=$?",
      "mv /etc/zz-public.conf /etc/zz-moved; echo mv=$?",
      "rm -f /etc/zz-public.conf; echo rm=$?",
      "ln -sf /proc/self/environ /etc/zz-public.conf; echo ln=$?",
      "touch /etc/zz-new; echo touch=$?",
      "cat /etc/zz-public.conf",
      "echo ---; cat /proc/self/mountinfo; echo ---",
      "ls -l /proc/self/fd /proc/1/fd",
      "echo ---",
      "cat /etc/zz-private.conf; echo private=$?",
    ].join("; ");
    const out = await seat.run(sh(script), { plan: await planWith(true) });
    const [before, mountinfo, fdList, after] = out.stdout.split("---\n");
    const lines = (before ?? "").split("\n");
    expect(lines[0]).toBe("public-etc-content");
    // Read and execute bits only: no write bit, and the setuid bit is not carried.
    expect(lines).toContain("mode=444");
    expect(lines).toContain("mode=555");
    expect(lines).toContain("tool-ran");
    for (const step of ["write", "chmod", "mv", "rm", "ln", "touch"]) expect(lines.find((l) => l.startsWith(`${step}=`))).not.toBe(`${step}=0`);
    // Unchanged after every attempt, inside and on the host.
    expect(lines.filter((l) => l === "public-etc-content")).toHaveLength(2);
    expect(await readFile(join(files, "public.conf"), "utf8")).toBe("public-etc-content\n");
    // Copies, not mounts; the private file is still a bind.
    expect(mounted(mountinfo ?? "", "/etc/zz-public.conf")).toBe(false);
    expect(mounted(mountinfo ?? "", "/etc/zz-tool")).toBe(false);
    expect(mounted(mountinfo ?? "", "/etc/zz-private.conf")).toBe(true);
    // No fd the launch passed is open in the seat or its init (bwrap reads and closes each):
    // what is open is sockets, pipes, bwrap's own eventfd and ls's listing of its own fds.
    const targets = (fdList ?? "").split("\n").flatMap((line) => (line.includes(" -> ") ? [line.slice(line.indexOf(" -> ") + 4)] : []));
    expect(targets.length).toBeGreaterThan(3);
    expect(targets.filter((t) => !/^(socket|pipe|anon_inode):/.test(t) && !/^\/proc\/\d+\/fd$/.test(t))).toEqual([]);
    if (seat.user.name !== "self") {
      // As root, the seat is another uid: the 0600 file is not readable through its bind, and was never copied.
      expect(out.stdout).not.toContain("PRIVATE-ETC-CANARY");
      expect(after).toMatch(/private=1/);
    }
  });

  it("control: the same files bound (not copyable) are mounts in the seat", async () => {
    const out = await seat.run(sh("cat /proc/self/mountinfo"), { plan: await planWith(false) });
    expect(mounted(out.stdout, "/etc/zz-public.conf")).toBe(true);
    expect(mounted(out.stdout, "/etc/zz-tool")).toBe(true);
  });

  it.runIf(process.getuid?.() === 0)(
    "as another uid (system mode): what the kernel denies the seat's uid is not copied — its group's bits, an ACL, a folder it cannot enter — and a copy is executable only where the seat could execute the file",
    async () => {
      const user = seat.user;
      await writeFile(join(files, "group.conf"), "GROUP-DENIED-CANARY\n");
      await chown(join(files, "group.conf"), 0, user.gid);
      // Anyone may read it but the seat's own group: the kernel takes the group's bits for the seat.
      await chmod(join(files, "group.conf"), 0o604);
      await writeFile(join(files, "acl.conf"), "ACL-DENIED-CANARY\n");
      await chmod(join(files, "acl.conf"), 0o644);
      let acl = true;
      try {
        execFileSync("setfacl", ["-m", `u:${user.uid}:---`, join(files, "acl.conf")], { stdio: "ignore" });
      } catch {
        acl = false; // no setfacl here (the acl package): the group case asks the same access(2)
      }
      await writeFile(join(files, "owner-only-exec"), "#!/bin/sh\necho ran-owner-only\n");
      await chmod(join(files, "owner-only-exec"), 0o744);
      const base = await planWith(true);
      const last = base.mounts.length - 1;
      const extra: MountOp[] = ["group.conf", "acl.conf", "owner-only-exec"].map((name) => ({
        op: "ro-bind",
        src: join(files, name),
        dest: `/etc/zz-${name}`,
        copyable: true,
      }));
      const plan = {
        ...base,
        mounts: [...base.mounts.slice(0, last), ...extra, ...base.mounts.slice(last)],
        sources: [...base.sources, ...extra.map((op) => (op as { src: string }).src)],
      };
      const out = await seat.run(
        sh(
          "cat /etc/zz-group.conf; echo group=$?; cat /etc/zz-acl.conf; echo acl=$?; stat -c 'mode=%a' /etc/zz-owner-only-exec; /etc/zz-owner-only-exec; echo exec=$?; echo ---; cat /proc/self/mountinfo",
        ),
        { plan },
      );
      const [lines, mountinfo] = out.stdout.split("---\n");
      expect(out.stdout).not.toContain("GROUP-DENIED-CANARY");
      expect(lines).toMatch(/group=1/);
      expect(mounted(mountinfo ?? "", "/etc/zz-group.conf")).toBe(true);
      if (acl) {
        expect(out.stdout).not.toContain("ACL-DENIED-CANARY");
        expect(lines).toMatch(/acl=1/);
      }
      // Readable by anyone, executable by its owner (root) alone: a read-only, unexecutable copy.
      expect(lines).toMatch(/mode=444/);
      expect(lines).not.toContain("ran-owner-only");
      expect(mounted(mountinfo ?? "", "/etc/zz-owner-only-exec")).toBe(false);

      // A world-readable file behind a folder only root may enter: as a bind, the seat's bwrap
      // cannot reach it (the launch fails); copied, it would be read. It is not copied.
      const locked = join(files, "locked");
      await mkdir(locked, { mode: 0o700 });
      await chmod(locked, 0o700);
      await writeFile(join(locked, "inner.conf"), "BEHIND-0700-CANARY\n");
      await chmod(join(locked, "inner.conf"), 0o644);
      const inner: MountOp = { op: "ro-bind", src: join(locked, "inner.conf"), dest: "/etc/zz-inner.conf", copyable: true };
      const lockedPlan = { ...base, mounts: [...base.mounts.slice(0, last), inner, ...base.mounts.slice(last)], sources: [...base.sources, inner.src] };
      const launched = await seat.launch(lockedPlan, sh("cat /etc/zz-inner.conf; echo read=$?"));
      let seen = "";
      if (launched.ok) {
        const io = launched.seat.io;
        if (io.kind === "pipes") io.stdout.on("data", (chunk: Buffer) => (seen += chunk.toString()));
        expect((await launched.seat.exit).kind).toBe("setup-failed");
      }
      expect(seen).not.toContain("BEHIND-0700-CANARY");
    },
  );

  it("the seat's own /etc files come as copies by default", async () => {
    const out = await seat.run(sh("cat /proc/self/mountinfo; echo ---; cat /etc/passwd | head -1"), {});
    const [mountinfo, rest] = out.stdout.split("---\n");
    expect(mounted(mountinfo ?? "", "/etc/passwd")).toBe(false);
    expect(rest).toMatch(/^root:/);
  });
});
