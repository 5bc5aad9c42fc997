import { execFileSync } from "node:child_process";
import { appendFileSync, readFileSync } from "node:fs";

/**
 * The system-mode seat user for tests run as root: `teamd-seat`, created (as setup.sh
 * does) when missing. Only ever called as root; as anyone else seats run as that user.
 */
export function ensureSeatUser(): { uid: number; gid: number } {
  ensureSeatIdRange();
  const id = (flag: string) => Number(execFileSync("id", [flag, "teamd-seat"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim());
  try {
    return { uid: id("-u"), gid: id("-g") };
  } catch {
    execFileSync("useradd", ["--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", "teamd-seat"], {
      stdio: "pipe",
    });
    return { uid: id("-u"), gid: id("-g") };
  }
}

/** The subordinate id range system mode gives each seat a uid from (daemon/host/seat-uids.ts), added as setup.sh adds it. */
function ensureSeatIdRange(): void {
  const files = ["/etc/subuid", "/etc/subgid"];
  const read = (file: string) => {
    try {
      return readFileSync(file, "utf8");
    } catch {
      return "";
    }
  };
  // One start for both files, as setup.sh does: a seat's uid and gid are the same number.
  const ends = files.flatMap((file) =>
    read(file)
      .split("\n")
      .map((line) => line.split(":"))
      .filter((parts) => parts.length === 3)
      .map(([, start, count]) => Number(start) + Number(count)),
  );
  const start = Math.max(0x7000_0000, ...ends.filter(Number.isFinite));
  for (const file of files) if (!/^teamd-seat:/m.test(read(file))) appendFileSync(file, `teamd-seat:${start}:65536\n`, { mode: 0o644 });
}
