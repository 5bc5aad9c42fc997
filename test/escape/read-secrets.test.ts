import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readFile, stat } from "node:fs/promises";
import { createRealSeat, type RealSeat } from "../sandbox/fixture/real-seat.js";

/**
 * Proves (docs/enforcement.md): "Containment (§11): a seat cannot read the owner's secrets
 * or reserved objects" — /etc/shadow and its kin, files outside the plan, a reserved object
 * inside a read-only folder and another (hard-linked) name of it, by path, by symlink and
 * through /proc.
 */
let seat: RealSeat;
beforeEach(async () => {
  seat = await createRealSeat();
});
afterEach(async () => {
  await seat.cleanup();
});

const sh = (script: string) => ["/bin/sh", "-c", script];

describe.runIf(process.platform === "linux")("escape: read the owner's secrets", () => {
  it("cannot read /etc/shadow, /etc/gshadow or the sudoers, by any name", async () => {
    // Control: it exists on the host (readable by root only; the seat must not even see the name).
    expect((await stat("/etc/shadow")).isFile()).toBe(true);
    const out = await seat.run(
      sh(
        `cat /etc/shadow; cat /etc/gshadow; cat /etc/sudoers; ln -s /etc/shadow ${seat.repo}/s && cat ${seat.repo}/s; ` +
          "cat /proc/1/root/etc/shadow; cat /proc/self/root/etc/shadow; ls /etc | grep -E '^(g?shadow|sudoers)'; echo done",
      ),
    );
    expect(out.stdout).toBe("done\n");
    expect(out.stderr).toMatch(/\/etc\/shadow: No such file or directory/);
    expect(out.stdout + out.stderr).not.toMatch(/root:[^:]*:\d+:/); // no shadow line anywhere
  });

  it("cannot read a file outside the plan, by path, symlink or /proc", async () => {
    expect(await readFile(`${seat.outside}/secret.txt`, "utf8")).toBe("OUTSIDE-SECRET\n"); // control
    const out = await seat.run(
      sh(
        `cat ${seat.outside}/secret.txt; ln -s ${seat.outside}/secret.txt ${seat.home}/l && cat ${seat.home}/l; ` +
          `cat /proc/1/root${seat.outside}/secret.txt; cat /proc/1/cwd/../outside/secret.txt; ls /root /home; echo done`,
      ),
    );
    expect(out.stdout).toBe("done\n");
    expect(out.stdout + out.stderr).not.toContain("OUTSIDE-SECRET");
  });

  it("cannot read a reserved object inside a read-only folder, nor its hard link, nor a reserved folder", async () => {
    expect(await readFile(seat.reservedFile, "utf8")).toBe("OWNER-PRIVATE-KEY\n"); // control
    expect(await readFile(seat.hardLink, "utf8")).toBe("OWNER-PRIVATE-KEY\n"); // control: same object
    const out = await seat.run(
      sh(
        `cat ${seat.reservedFile}; cat ${seat.hardLink}; ls -A ${seat.reservedDir}; cat ${seat.reservedDir}/HEAD; ` +
          `cp ${seat.hardLink} ${seat.tmp}/copy; cat ${seat.tmp}/copy; ` +
          `node -e 'try { console.log(require("fs").readFileSync(process.argv[1], "utf8")) } catch (e) { console.log(e.code) }' ${seat.reservedFile}; echo done`,
      ),
    );
    expect(out.stdout + out.stderr).not.toMatch(/OWNER-PRIVATE-KEY|refs\/heads/);
    expect(out.stdout).toMatch(/EACCES\ndone\n$/);
  });

  it("cannot read the test runner's home or the repository teamd runs from", async () => {
    const out = await seat.run(sh(`ls ${process.cwd()} ${process.env.HOME ?? "/root"} /work 2>&1; echo done`));
    expect(out.stdout).not.toMatch(/package\.json|node_modules/);
    expect(out.stdout).toMatch(/done\n$/);
  });
});
