import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { connectCommand, createRealSeat, type RealSeat } from "../sandbox/fixture/real-seat.js";

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

  it("does write its own repository, home and tmp (the control that writing works at all)", async () => {
    const out = await seat.run(sh(`echo a > ${seat.repo}/a && echo b > ${seat.home}/b && echo c > ${seat.tmp}/c && echo ok`));
    expect(out.stdout).toBe("ok\n");
    expect(await readFile(join(seat.repo, "a"), "utf8")).toBe("a\n");
  });
});
