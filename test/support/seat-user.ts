import { execFileSync } from "node:child_process";

/**
 * The system-mode seat user for tests run as root: `teamd-seat`, created (as setup.sh
 * does) when missing. Only ever called as root; as anyone else seats run as that user.
 */
export function ensureSeatUser(): { uid: number; gid: number } {
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
