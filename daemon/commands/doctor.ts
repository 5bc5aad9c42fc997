import { existsSync, readFileSync } from "node:fs";
import { access } from "node:fs/promises";
import { constants } from "node:fs";
import { createSeatCgroup, readCgroupFacts } from "../../src/sandbox/cgroup-host.js";
import { planCgroups } from "../../src/sandbox/cgroup-plan.js";
import { createLauncher } from "../../src/sandbox/launcher.js";
import { detectMode, resolveHome } from "../host/home.js";
import { registrations } from "../lifecycle/registry.js";
import { builtShimBundle } from "../host/seat-layout.js";
import { lookupUser, SEAT_SYSTEM_USER } from "../host/users.js";
import { subordinateRange } from "../host/seat-uids.js";
import { untraversable } from "../host/traversal.js";
import { join } from "node:path";
import type { Ambient } from "../host/ambient.js";
import { selftestStanding } from "../host/selftest-record.js";

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

export async function runChecks(now: number = 0): Promise<Check[]> {
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
      checks.push({
        name: "seat user",
        verdict: "fail",
        detail: `system mode (root) and no '${SEAT_SYSTEM_USER}' user`,
        fix: `run scripts/setup.sh as root, or: useradd --system --user-group --no-create-home --shell /usr/sbin/nologin ${SEAT_SYSTEM_USER}`,
      });
    } else {
      user = found;
      checks.push({ name: "seat user", verdict: "ok", detail: `system mode: seats are ${SEAT_SYSTEM_USER} (uid ${found.uid}) inside their sandboxes` });
    }
    // Each seat's own host uid comes from this range (daemon/host/seat-uids.ts).
    const read = (path: string) => {
      try {
        return readFileSync(path, "utf8");
      } catch {
        return "";
      }
    };
    const [uids, gids] = [subordinateRange(read("/etc/subuid"), SEAT_SYSTEM_USER), subordinateRange(read("/etc/subgid"), SEAT_SYSTEM_USER)];
    checks.push(
      uids === undefined || gids === undefined
        ? {
            name: "seat ids",
            verdict: "fail",
            detail: `no subordinate id range for '${SEAT_SYSTEM_USER}' in /etc/subuid and /etc/subgid: no seat can start (each runs as a host uid of its own)`,
            fix: `run scripts/setup.sh as root, or: usermod --add-subuids 1879048192-1879113727 --add-subgids 1879048192-1879113727 ${SEAT_SYSTEM_USER}`,
          }
        : { name: "seat ids", verdict: "ok", detail: `one host uid per seat, from ${uids.start}-${uids.start + uids.count - 1} (gids from ${gids.start})` },
    );
    if (uids !== undefined && gids !== undefined) checks.push(traversalCheck(uids.start, gids.start));
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
      : {
          name: "user namespaces",
          verdict: "fail",
          detail: usernsProblems.join("; "),
          fix: "sysctl -w user.max_user_namespaces=15000 kernel.unprivileged_userns_clone=1, or allow bwrap in AppArmor (an apparmor profile for /usr/bin/bwrap with `userns`)",
        },
  );

  if (mode === "system" && user === undefined) {
    checks.push({ name: "bubblewrap", verdict: "fail", detail: "not probed: no seat user to probe as", fix: `create the '${SEAT_SYSTEM_USER}' user` });
  } else {
    const probe = await createLauncher().probe(user);
    checks.push(
      probe.ok
        ? { name: "bubblewrap", verdict: "ok", detail: probe.details.join("; ") }
        : {
            name: "bubblewrap",
            verdict: "fail",
            detail: `${probe.refusal.rule}: ${probe.refusal.reason}`,
            fix: (probe.refusal as { fix?: string }).fix ?? "run scripts/setup.sh",
          },
    );
  }

  checks.push(await cgroupCheck());

  const prlimit = await access("/usr/bin/prlimit", constants.X_OK).then(
    () => true,
    () => false,
  );
  checks.push(
    prlimit
      ? { name: "prlimit", verdict: "ok", detail: "/usr/bin/prlimit (open-files limits; memory and processes where a seat has no cgroup)" }
      : {
          name: "prlimit",
          verdict: "warn",
          detail: "/usr/bin/prlimit missing: a seat that asks for open-files (or, without a cgroup, memory or processes) does not start",
          fix: "install util-linux",
        },
  );

  const shim = builtShimBundle();
  checks.push(
    existsSync(shim)
      ? { name: "shim bundle", verdict: "ok", detail: shim }
      : { name: "shim bundle", verdict: "fail", detail: `${shim} is missing`, fix: "npm run build" },
  );
  const loose = await uncontainedCheck();
  if (loose !== undefined) checks.push(loose);
  checks.push(selftestCheck(now));
  return checks;
}

/**
 * The last `teamd selftest` here (doctor probes features; the selftest attacks): passed and current,
 * ok; none, incomplete, or teamd, bubblewrap or the kernel changed since, warn (seats start, unproven);
 * failed, fail (contained seats do not start: containment.selftest-failed).
 */
function selftestCheck(now: number): Check {
  const standing = selftestStanding(resolveHome());
  const age = (at: string) => {
    const minutes = Math.max(0, Math.round((now - Date.parse(at)) / 60_000));
    return minutes < 120 ? `${minutes} min ago` : minutes < 2880 ? `${Math.round(minutes / 60)} h ago` : `${Math.round(minutes / 1440)} days ago`;
  };
  if (standing.kind === "passed") {
    const d = standing.doc;
    const partial = d.rows.filter((r) => r.here === "partial").map((r) => `${r.id}: ${r.note ?? ""}`);
    return {
      name: "selftest",
      verdict: "ok",
      detail: `passed ${age(d.startedAt)} (${d.startedAt}; ${d.host.bwrap}, kernel ${d.host.kernel}, ${(d.durationMs / 1000).toFixed(1)} s)${partial.length ? `; partial here, as documented: ${partial.join("; ")}` : ""}`,
    };
  }
  if (standing.kind === "failed")
    return {
      name: "selftest",
      verdict: "fail",
      detail: `${standing.reason} (${age(standing.doc.startedAt)})`,
      fix: "find what broke (teamd selftest names each row and attack), fix the host, then run teamd selftest until it passes",
    };
  return {
    name: "selftest",
    verdict: "warn",
    detail: `${standing.reason}${standing.doc ? ` (last run ${age(standing.doc.startedAt)})` : ""}`,
    fix: "teamd selftest",
  };
}

/**
 * Every folder a seat's bind sources lie under must be searchable by a seat's uid (bwrap opens
 * them as it): the configured TEAMD_HOME (its seats, shim copy and sockets) and the node runtime
 * the shim runs on. A 0700 folder above them (a `mktemp -d`, /root for an nvm node) stops every
 * seat; `teamd start` refuses the same way, naming the folder (daemon/lifecycle/start-diagnosis.ts).
 */
function traversalCheck(uid: number, gid: number): Check {
  const home = resolveHome();
  const paths = [join(home.root, "seats"), join(home.root, "shim"), process.execPath];
  for (const path of paths) {
    const blocked = untraversable(path, uid, gid);
    if (blocked !== undefined) {
      return {
        name: "seat folders",
        verdict: "fail",
        detail: `a seat's uid cannot traverse ${blocked.folder} (mode ${blocked.mode}, ${blocked.owner}) on the way to ${path}: no seat can start`,
        fix: `chmod o+x ${blocked.folder}, or put TEAMD_HOME (and node) where every folder above them is searchable`,
      };
    }
  }
  return { name: "seat folders", verdict: "ok", detail: `a seat's uid can reach ${home.root} and the node runtime ${process.execPath}` };
}

/**
 * What a seat's cgroups will be here, probed for real: the same planner `teamd start` uses
 * (src/sandbox/cgroup-plan.ts), then — where teamd may write — a probe cgroup made and removed
 * under teamd's own, to see that cgroup.kill and the limit files exist.
 */
async function cgroupCheck(): Promise<Check> {
  const facts = await readCgroupFacts();
  const v2 = facts.mounts.find((m) => m.type === "cgroup2");
  const v1 = facts.mounts
    .filter((m) => m.type === "cgroup" && m.controllers.some((c) => ["memory", "pids", "cpu", "cpuacct"].includes(c)))
    .flatMap((m) => m.controllers);
  const layout = `${v2 ? `v2 at ${v2.path} (controllers: ${facts.v2Controllers.join(" ") || "none"})` : "no v2 hierarchy"}${v1.length ? `; v1: ${v1.join(", ")}` : ""}`;
  const decision = planCgroups(
    facts,
    { home: "doctor", team: "probe", seat: "probe", run: String(process.pid) },
    { memoryBytes: 64 * 1024 ** 2, processes: 64, cpus: 1 },
  );
  if (decision.kind === "none") {
    return {
      name: "cgroups",
      verdict: "warn",
      detail: `${layout}. No per-seat cgroup: ${decision.reason}. Seats get rlimits instead — memory and processes partial (per process, and per uid), open files exact; a seat asking for cpus does not start; CPU and memory are metered by a /proc walk; a seat is killed through its namespace init only`,
      fix: "run teamd as root (system mode), or give it a delegated cgroup v2 subtree (systemd: Delegate=yes)",
    };
  }
  const { plan } = decision;
  let probe = "";
  try {
    const cg = await createSeatCgroup(plan);
    const hasKill = plan.kill !== undefined && existsSync(plan.kill);
    const left = await cg.remove(2_000);
    probe = `; probe cgroup made and removed${left.length ? ` (left: ${left.join(", ")})` : ""}; cgroup.kill ${hasKill ? "present" : "absent (kill through the namespace init only)"}`;
  } catch (error) {
    return {
      name: "cgroups",
      verdict: "fail",
      detail: `${layout}. A probe seat cgroup could not be made: ${(error as Error).message}; a seat that asks for limits does not start`,
      fix: "check the cgroup mounts and teamd's permissions on its own cgroup, or set `limits: none` for the seats",
    };
  }
  const all = ["memoryBytes", "processes", "cpus"] as const;
  const missing = all.filter((l) => !plan.byCgroup.includes(l));
  return {
    name: "cgroups",
    verdict: missing.length === 0 ? "ok" : "warn",
    detail: `${layout}. Each seat gets its own cgroups: ${plan.summary.replace(/memory 64M|pids 64|cpus 1\b/g, (m) => m.split(" ")[0] as string)}${probe}; CPU and memory metered from the cgroup counters${missing.length ? `; no controller here for ${missing.join(", ")} (memory and processes fall back to rlimits, cpus stops the seat)` : ""}`,
    ...(missing.length ? { fix: "mount the missing controller (v1) or enable it in the v2 subtree" } : {}),
  };
}

/**
 * Seats running uncontained now (`containment: none`), from the seat registry the machine-wide
 * stop reads: a warning, never a failure — the owner asked for it — so that it is not forgotten.
 * Only what runs is seen here (an applied policy that says `none` shows at `teamd apply` and start).
 */
async function uncontainedCheck(): Promise<Check | undefined> {
  let running: { team: string; seat: string }[];
  try {
    running = (await registrations(resolveHome(), { prune: false })).filter((r) => r.containment === "none");
  } catch {
    return undefined;
  }
  if (running.length === 0) return undefined;
  return {
    name: "uncontained seats",
    verdict: "warn",
    detail: `running with containment: none (teamd's refusals hold against a mistake only for them): ${running.map((r) => `${r.seat}@${r.team}`).join(", ")}`,
    fix: "remove `containment: none` from their start in teamd.yaml, teamd apply, and start them again",
  };
}

export async function doctor(options: { json?: boolean }, ambient: Ambient): Promise<void> {
  const checks = await runChecks(ambient.now());
  const ok = checks.every((c) => c.verdict !== "fail");
  if (options.json) process.stdout.write(JSON.stringify({ ok, checks }) + "\n");
  else {
    for (const c of checks)
      process.stdout.write(`${c.verdict.padEnd(4)}  ${c.name}: ${c.detail}${c.fix && c.verdict !== "ok" ? `\n      fix: ${c.fix}` : ""}\n`);
    process.stdout.write(ok ? "verdict: seats can start here\n" : "verdict: seats cannot start here (see fail above)\n");
  }
  if (!ok) process.exitCode = 1;
}
