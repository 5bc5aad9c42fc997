import { existsSync, readFileSync } from "node:fs";
import { access } from "node:fs/promises";
import { constants } from "node:fs";
import { createLauncher } from "../src/sandbox/launcher.js";
import { detectMode } from "./home.js";
import { builtShimBundle } from "./seat-layout.js";
import { lookupUser, SEAT_SYSTEM_USER } from "./seat-user.js";

/**
 * `teamd doctor`: can seats start on this machine, and how contained are they? Each check
 * probes the real thing (a minimal bwrap seat, the kernel's knobs, the cgroup mounts) and
 * gives a verdict — ok, warn (seats start, something is weaker), fail (no seat starts) —
 * with the fix. Exit 1 when any check fails.
 */
export type Verdict = "ok" | "warn" | "fail";

export interface Check {
  readonly name: string;
  readonly verdict: Verdict;
  readonly detail: string;
  readonly fix?: string;
}

function readKnob(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8").trim();
  } catch {
    return undefined;
  }
}

export async function runChecks(): Promise<Check[]> {
  const checks: Check[] = [];
  if (process.platform !== "linux") {
    checks.push({ name: "platform", verdict: "fail", detail: `containment on ${process.platform} is not supported yet`, fix: "run seats on Linux" });
    return checks;
  }
  checks.push({ name: "platform", verdict: "ok", detail: "linux" });

  const mode = detectMode();
  let user: { uid: number; gid: number } | undefined;
  if (mode === "system") {
    const found = lookupUser(SEAT_SYSTEM_USER);
    if (found === undefined) {
      checks.push({ name: "seat user", verdict: "fail", detail: `system mode (root) and no '${SEAT_SYSTEM_USER}' user`, fix: `run scripts/setup.sh as root, or: useradd --system --user-group --no-create-home --shell /usr/sbin/nologin ${SEAT_SYSTEM_USER}` });
    } else {
      user = found;
      checks.push({ name: "seat user", verdict: "ok", detail: `system mode: seats run as ${SEAT_SYSTEM_USER} (uid ${found.uid})` });
    }
  } else {
    checks.push({ name: "seat user", verdict: "ok", detail: `user mode: seats run as uid ${process.getuid?.()} in unprivileged user namespaces` });
  }

  const maxUserNs = readKnob("/proc/sys/user/max_user_namespaces");
  const clone = readKnob("/proc/sys/kernel/unprivileged_userns_clone");
  const apparmor = readKnob("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
  const usernsProblems = [
    maxUserNs === "0" ? "user.max_user_namespaces is 0" : undefined,
    clone === "0" ? "kernel.unprivileged_userns_clone is 0" : undefined,
    apparmor === "1" ? "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1)" : undefined,
  ].filter((p): p is string => p !== undefined);
  checks.push(
    usernsProblems.length === 0
      ? { name: "user namespaces", verdict: "ok", detail: `enabled (max_user_namespaces ${maxUserNs ?? "?"})` }
      : { name: "user namespaces", verdict: "fail", detail: usernsProblems.join("; "), fix: "sysctl -w user.max_user_namespaces=15000 kernel.unprivileged_userns_clone=1, or allow bwrap in AppArmor (an apparmor profile for /usr/bin/bwrap with `userns`)" },
  );

  if (mode === "system" && user === undefined) {
    checks.push({ name: "bubblewrap", verdict: "fail", detail: "not probed: no seat user to probe as", fix: `create the '${SEAT_SYSTEM_USER}' user` });
  } else {
    const probe = await createLauncher().probe(user);
    checks.push(
      probe.ok
        ? { name: "bubblewrap", verdict: "ok", detail: probe.details.join("; ") }
        : { name: "bubblewrap", verdict: "fail", detail: `${probe.refusal.rule}: ${probe.refusal.reason}`, fix: (probe.refusal as { fix?: string }).fix ?? "run scripts/setup.sh" },
    );
  }

  // The v2 hierarchy may be mounted beside v1 (e.g. /sys/fs/cgroup/unified): find it in /proc/mounts.
  const v2Mount = (readKnob("/proc/mounts") ?? "").split("\n").map((line) => line.split(" ")).find((f) => f[2] === "cgroup2")?.[1];
  const v2 = v2Mount !== undefined;
  const controllers = v2Mount === undefined ? "" : (readKnob(`${v2Mount}/cgroup.controllers`) ?? "");
  const v1 = ["memory", "pids", "cpu"].filter((c) => existsSync(`/sys/fs/cgroup/${c}`));
  const writable = await access("/sys/fs/cgroup", constants.W_OK).then(() => true, () => false);
  checks.push({
    name: "cgroups",
    verdict: "warn",
    detail:
      `${v2 ? `v2 at ${v2Mount} (controllers: ${controllers || "none"})` : "no v2 hierarchy"}${v1.length ? `; v1 controllers: ${v1.join(", ")}` : ""}` +
      `${writable ? "; writable by teamd" : "; not writable by teamd"}. Per-seat cgroups are not used yet: limits are rlimits (partial), memory and CPU are not metered per tree`,
    fix: "nothing to do now; per-seat cgroups come with the limits work of issue 7",
  });

  const prlimit = await access("/usr/bin/prlimit", constants.X_OK).then(() => true, () => false);
  checks.push(prlimit ? { name: "prlimit", verdict: "ok", detail: "/usr/bin/prlimit (rlimits for seat limits)" } : { name: "prlimit", verdict: "warn", detail: "/usr/bin/prlimit missing: a seat that asks for limits does not start", fix: "install util-linux" });

  const shim = builtShimBundle();
  checks.push(existsSync(shim) ? { name: "shim bundle", verdict: "ok", detail: shim } : { name: "shim bundle", verdict: "fail", detail: `${shim} is missing`, fix: "npm run build" });
  return checks;
}

export async function doctor(options: { json?: boolean }): Promise<void> {
  const checks = await runChecks();
  const ok = checks.every((c) => c.verdict !== "fail");
  if (options.json) process.stdout.write(JSON.stringify({ ok, checks }) + "\n");
  else {
    for (const c of checks) process.stdout.write(`${c.verdict.padEnd(4)}  ${c.name}: ${c.detail}${c.fix && c.verdict !== "ok" ? `\n      fix: ${c.fix}` : ""}\n`);
    process.stdout.write(ok ? "verdict: seats can start here\n" : "verdict: seats cannot start here (see fail above)\n");
  }
  if (!ok) process.exitCode = 1;
}
