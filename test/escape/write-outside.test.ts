import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import { chmod, chown, copyFile, mkdir, readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { connectCommand, createRealSeat, type RealSeat } from "../sandbox/fixture/real-seat.js";
import { SHIM_GIT_REMOTE_SUFFIX, SHIM_LAZY_SUFFIX } from "../../src/sandbox/linux-base.js";

/**
 * Proves (docs/enforcement.md): "Containment (§11): a seat writes only its own repository,
 * home and tmp; a mask survives the seat renaming the folder that holds it". Each write is
 * checked from the host: what the attacker wanted to change is unchanged.
 */
let seat: RealSeat;
beforeEach(async () => {
  seat = await createRealSeat();
});
afterEach(async () => {
  await seat.cleanup();
});

const sh = (script: string) => ["/bin/sh", "-c", script];

describe.runIf(process.platform === "linux")("escape: write outside the seat's folders", () => {
  it("cannot write into a read-only root, replace a file there, or delete one", async () => {
    const before = await readdir(seat.shared);
    const out = await seat.run(
      sh(
        `cd ${seat.shared}; echo pwn > new.txt; echo pwn > notes.txt; rm -f notes.txt; mv notes.txt moved.txt; mkdir d; touch -d 2000-01-01 notes.txt; echo done`,
      ),
    );
    expect(out.stdout).toBe("done\n");
    expect(out.stderr).toMatch(/Read-only file system/);
    expect((await readdir(seat.shared)).sort()).toEqual(before.sort());
    expect(await readFile(join(seat.shared, "notes.txt"), "utf8")).toBe("shared notes\n");
  });

  it("cannot create anything outside its folders — not in /, not in a path it makes up, not through a symlink it plants", async () => {
    const out = await seat.run(
      sh(
        `mkdir -p ${seat.outside} && echo pwn > ${seat.outside}/secret.txt; echo pwn > /owned; mkdir /srv; ` +
          `ln -s ${seat.outside}/secret.txt ${seat.repo}/trap && echo pwn > ${seat.repo}/trap; ` +
          `echo pwn > /usr/owned; echo pwn > /etc/passwd; echo done`,
      ),
    );
    expect(out.stdout).toBe("done\n");
    expect(await readFile(join(seat.outside, "secret.txt"), "utf8")).toBe("OUTSIDE-SECRET\n");
    await expect(stat("/owned")).rejects.toThrow(/ENOENT/);
    await expect(stat("/usr/owned")).rejects.toThrow(/ENOENT/);
    // The planted symlink is left in the seat's own repository: the daemon must never follow it (it does not open seat files by path).
    expect(out.stderr).toMatch(/Read-only file system|No such file or directory/);
  });

  it("keeps a masked socket masked when the seat renames the folder that holds it (control: live on the host)", async () => {
    const out = await seat.run(
      sh(
        `cd ${seat.home} && mv sub moved && ${connectCommand(`${seat.home}/moved/service.sock`)
          .map((a) => `'${a.replace(/'/g, "'\\''")}'`)
          .join(" ")}; rm moved/service.sock; echo rm=$?`,
      ),
    );
    expect(out.stdout).toMatch(/^error (ECONNREFUSED|EACCES|ENOTSOCK)\nrm=1\n$/);
    expect(out.stderr).toMatch(/Device or resource busy/);
    // On the host the folder did move (it is the seat's own) and the socket is alive in it.
    expect((await stat(join(seat.home, "moved", "service.sock"))).isSocket()).toBe(true);
  });

  it("cannot change the shim, its lazy part (its commands' code and their V8 code cache) or the remote helper's front, which every seat binds from the same three files", async () => {
    // As the daemon installs them (daemon/lifecycle/prepare.ts): in user mode the copies are the
    // daemon's user's, the seat's own uid outside — only the read-only binds stand between.
    const dir = join(seat.base, "shim");
    await mkdir(dir, { recursive: true });
    const front = join(dir, "teamd-shim-test.cjs");
    const part = `${front}${SHIM_LAZY_SUFFIX}`;
    const helper = `${front}${SHIM_GIT_REMOTE_SUFFIX}`;
    await copyFile(join(process.cwd(), "dist/shim-bundle/teamd-shim.cjs"), front);
    await copyFile(join(process.cwd(), `dist/shim-bundle/teamd-shim.cjs${SHIM_LAZY_SUFFIX}`), part);
    await copyFile(join(process.cwd(), `dist/shim-bundle/teamd-shim.cjs${SHIM_GIT_REMOTE_SUFFIX}`), helper);
    await chmod(front, 0o755);
    await chmod(part, 0o644);
    await chmod(helper, 0o755);
    // As in user mode, the files are the seat's own uid's (as root the test seat runs as its own user).
    for (const file of [dir, front, part, helper]) await chown(file, seat.user.uid, seat.user.gid);
    const digest = async (file: string) =>
      createHash("sha256")
        .update(await readFile(file))
        .digest("hex");
    const before = [await digest(front), await digest(part), await digest(helper)];
    const plan = await seat.plan((input) => ({
      ...input,
      host: { ...input.host, shimBundle: front, shimLazy: part, shimGitRemote: helper, shimCommand: "teamd-shim" },
    }));
    // (Not the names in /run/teamd/bin: the seat's own tmpfs, as its PATH is its own to change.)
    const attempts = ["/run/teamd/shim", "/run/teamd/shim.lazy", "/run/teamd/git-remote-teamd"]
      .map(
        (f) =>
          `echo pwn >> ${f}; echo pwn > ${f}; truncate -s 0 ${f}; chmod 777 ${f}; touch -d 2000-01-01 ${f}; ` +
          `rm -f ${f}; mv ${f} ${f}.moved; echo x > ${f}.new && mv -f ${f}.new ${f}; ln -sf /tmp/evil ${f}; ` +
          `mount --bind /tmp/evil ${f}; umount -l ${f}; ` +
          `node -e 'try { require("fs").writeFileSync(process.argv[1], "pwn") } catch (e) { console.error(e.code) }' ${f}; `,
      )
      .join("");
    const out = await seat.run(
      sh(
        `echo evil > /tmp/evil; ${attempts} sha256sum /run/teamd/shim /run/teamd/shim.lazy /run/teamd/git-remote-teamd; readlink /run/teamd/bin/git-remote-teamd; teamd-shim --version`,
      ),
      { plan },
    );
    expect(out.stderr).toMatch(/Read-only file system|EROFS/);
    // Unchanged inside, as the seat sees them after its attempts, and on the host.
    expect(out.stdout).toBe(
      `${before[0]}  /run/teamd/shim\n${before[1]}  /run/teamd/shim.lazy\n${before[2]}  /run/teamd/git-remote-teamd\n/run/teamd/git-remote-teamd\n0.1.0\n`,
    );
    expect([await digest(front), await digest(part), await digest(helper)]).toEqual(before);
    // Control: a command through the part runs (no daemon here: exit 4, unreachable).
    const control = await seat.run(sh(`TEAMD_SOCKET=/tmp/none.sock teamd-shim whoami; echo rc=$?`), { plan });
    expect(control.stderr).toContain("cannot reach the teamd daemon");
    expect(control.stdout).toBe("rc=4\n");
  });

  it("does write its own repository, home and tmp (the control that writing works at all)", async () => {
    const out = await seat.run(sh(`echo a > ${seat.repo}/a && echo b > ${seat.home}/b && echo c > ${seat.tmp}/c && echo ok`));
    expect(out.stdout).toBe("ok\n");
    expect(await readFile(join(seat.repo, "a"), "utf8")).toBe("a\n");
  });
});
