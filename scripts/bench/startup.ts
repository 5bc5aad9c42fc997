import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startChild, stopChild } from "../lib/child.js";
import { BENCH_TEAM_FILE, makeBenchRepo } from "./fixture.js";
import { percentile, type BenchRow } from "./report.js";

/** What npm installs as `teamd` (package.json bin): the bundled front (scripts/build-shim.ts). */
const TEAMD = fileURLToPath(new URL("../../bin/teamd.cjs", import.meta.url));
/** Runs of each command, interleaved (one of each, then again), and their median. */
const RUNS = 21;
/** 1 MiB pushes and fetches, through teamd and locally, interleaved. */
const GIT_RUNS = 15;
/** A pause after each command the daemon answers, before the next is timed. */
const SETTLE_MS = 250;

/**
 * What a person and an agent wait for on every command (issue 26): a program's start, measured
 * against `node -e 0` — Node's own floor — beside it, in the same run, interleaved, RUNS times
 * each, medians compared:
 * - the owner's CLI: `teamd --version`, `--help`, a usage error (nothing to load but the parser:
 *   at most 1.5× the floor), `teamd status` with a daemon up (the client and its messages: 2.5×),
 *   `teamd exec SEAT -- true` (the CLI, the RPC, a contained process: 3×);
 * - inside a seat, timed by the seat's own shell against `node -e 0` in the same seat:
 *   `teamd-shim --version` (1.5×), `teamd-shim whoami` (a round trip: 2×); `git push teamd` of
 *   a fresh 1 MiB commit and `git fetch teamd` of it, each against the same commit pushed to and
 *   fetched from a bare repository in the seat's /tmp (2×), GIT_RUNS times;
 * - reported beside them, no target: bwrap alone (`bwrap --ro-bind / / true`), and
 *   `firejail --noprofile true` and `srt true` (sandbox-runtime) where installed — the tools a
 *   user would pick instead.
 */
export async function benchStartup(): Promise<BenchRow[]> {
  if (process.platform !== "linux") return [];
  const dir = mkdtempSync(join(tmpdir(), "teamd-bench-startup-"));
  if (process.getuid?.() === 0) chmodSync(dir, 0o711);
  const home = join(dir, "home");
  const repo = join(dir, "repo");
  // Node's floor is Node's own: a variable that makes every node start slower (NODE_OPTIONS; a
  // CA bundle to load, NODE_EXTRA_CA_CERTS: ~45 ms on the machine this was written on) would hide
  // teamd's own cost in a larger floor. A seat's environment has neither.
  const { NODE_OPTIONS: _options, NODE_EXTRA_CA_CERTS: _certs, ...clean } = process.env;
  // The act budget out of reach, as in seat.ts: the pushes measure the path, not the budget.
  const env = { ...clean, TEAMD_HOME: home, TEAMD_OWNER_KEY: join(dir, "keys/owner.key"), HOME: dir, TEAMD_ACT_BUDGET: "1000000/1000000" };
  const teamd = (...args: string[]) => {
    const r = spawnSync(process.execPath, [TEAMD, ...args], { cwd: repo, env, encoding: "utf8", timeout: 120_000 });
    if (r.status !== 0) throw new Error(`teamd ${args.join(" ")} failed (${r.status}): ${r.stderr}`);
    return r.stdout;
  };
  makeBenchRepo(repo);

  // Before the daemon: a usage error and --version need none, and must not wait for one.
  const node = process.execPath;
  const host: Array<{ name: string; argv: readonly string[]; expect: number; settle?: boolean }> = [
    { name: "node", argv: [node, "-e", "0"], expect: 0 },
    { name: "version", argv: [node, TEAMD, "--version"], expect: 0 },
    { name: "help", argv: [node, TEAMD, "--help"], expect: 0 },
    { name: "usage", argv: [node, TEAMD, "no-such-command"], expect: 2 },
  ];
  const daemon = await startChild([TEAMD, "serve"], { ...env }, "teamd: ready");
  try {
    teamd("init", "--team", "bench", "--yes");
    writeFileSync(join(repo, "teamd.yaml"), BENCH_TEAM_FILE);
    teamd("apply", "--yes");
    teamd("start", "bench@bench");
    host.push(
      { name: "status", argv: [node, TEAMD, "status"], expect: 0, settle: true },
      { name: "exec", argv: [node, TEAMD, "exec", "bench@bench", "--", "true"], expect: 0, settle: true },
      { name: "bwrap", argv: ["bwrap", "--ro-bind", "/", "/", "true"], expect: 0 },
    );
    if (onPath("firejail")) host.push({ name: "firejail", argv: ["firejail", "--quiet", "--noprofile", "true"], expect: 0 });
    if (onPath("srt")) host.push({ name: "srt", argv: ["srt", "true"], expect: 0 });
    const times = new Map<string, number[]>(host.map((c) => [c.name, []]));
    for (let i = 0; i < RUNS; i++) {
      for (const c of host) {
        const start = process.hrtime.bigint();
        const r = spawnSync(c.argv[0] as string, c.argv.slice(1), { cwd: repo, env, stdio: "ignore", timeout: 60_000 });
        const ms = Number(process.hrtime.bigint() - start) / 1e6;
        if (r.status !== c.expect) throw new Error(`${c.argv.join(" ")} exited ${r.status} (expected ${c.expect})`);
        times.get(c.name)?.push(ms);
        // The daemon's own work after a call (an exec's records, its fsyncs) must not land on the next command measured.
        if (c.settle) await sleep(SETTLE_MS);
      }
    }
    const hostMedian = (name: string) => median(times.get(name) ?? []);

    // Inside the seat: its shell times each command with its own clock, interleaved.
    const seatRuns = `i=0; while [ $i -lt ${RUNS} ]; do for c in node version whoami; do case $c in node) set -- node -e 0;; version) set -- teamd-shim --version;; whoami) set -- teamd-shim whoami;; esac; t0=$(date +%s%N); "$@" >/dev/null || exit 9; t1=$(date +%s%N); echo "$c $((t1-t0))"; done; i=$((i+1)); done`;
    const seat = new Map<string, number[]>();
    for (const line of teamd("exec", "bench@bench", "--", "sh", "-c", seatRuns).trim().split("\n")) {
      const [name, ns] = line.split(" ");
      if (name === undefined || ns === undefined) continue;
      seat.set(name, [...(seat.get(name) ?? []), Number(ns) / 1e6]);
    }
    // git push and fetch of a fresh 1 MiB commit through teamd, each beside the same commit's
    // push to (and fetch from) a bare repository in the seat's own /tmp, GIT_RUNS times, interleaved.
    const gitRuns = [
      "git config user.name bench && git config user.email bench@bench.invalid",
      "rm -rf /tmp/bench-bare.git /tmp/bench-ft /tmp/bench-fl && git init -q --bare /tmp/bench-bare.git && git init -q /tmp/bench-ft && git init -q /tmp/bench-fl",
      `i=0; while [ $i -lt ${GIT_RUNS} ]; do head -c 1048576 /dev/urandom > big$i.bin && git add big$i.bin && git commit -qm big$i || exit 9`,
      't0=$(date +%s%N); git push -q teamd HEAD:big$i || exit 9; t1=$(date +%s%N); echo "push-teamd $((t1-t0))"',
      't0=$(date +%s%N); git push -q /tmp/bench-bare.git HEAD:refs/heads/big$i || exit 9; t1=$(date +%s%N); echo "push-local $((t1-t0))"',
      't0=$(date +%s%N); git -C /tmp/bench-ft fetch -q teamd::seat refs/heads/seat/bench/big$i:refs/remotes/t/big$i || exit 9; t1=$(date +%s%N); echo "fetch-teamd $((t1-t0))"',
      't0=$(date +%s%N); git -C /tmp/bench-fl fetch -q /tmp/bench-bare.git refs/heads/big$i:refs/remotes/l/big$i || exit 9; t1=$(date +%s%N); echo "fetch-local $((t1-t0))"',
      "i=$((i+1)); done",
    ].join("\n");
    for (const line of teamd("exec", "--timeout", "600", "bench@bench", "--", "sh", "-c", gitRuns).trim().split("\n")) {
      const [name, ns] = line.split(" ");
      if (name === undefined || ns === undefined) continue;
      seat.set(name, [...(seat.get(name) ?? []), Number(ns) / 1e6]);
    }
    const seatMedian = (name: string) => median(seat.get(name) ?? []);
    teamd("stop", "bench@bench");

    const floor = hostMedian("node");
    const seatFloor = seatMedian("node");
    const runs = `median of ${RUNS}, interleaved`;
    const ratio = (name: string, value: number, base: number, max: number, what: string): BenchRow => ({
      name,
      value: value / base,
      unit: "ratio",
      note: `${what} (${value.toFixed(1)} ms / ${base.toFixed(1)} ms)`,
      target: { max, text: `<= ${max}` },
    });
    const rows: BenchRow[] = [
      { name: "startup.node.ms", value: floor, unit: "ms", note: `node -e 0 on the host: the floor; ${runs}` },
      ratio("startup.teamd-version.vs-node", hostMedian("version"), floor, 1.5, "teamd --version / node -e 0"),
      ratio("startup.teamd-help.vs-node", hostMedian("help"), floor, 1.5, "teamd --help / node -e 0"),
      ratio("startup.teamd-usage.vs-node", hostMedian("usage"), floor, 1.5, "teamd no-such-command (exit 2) / node -e 0"),
      ratio("startup.teamd-status.vs-node", hostMedian("status"), floor, 2.5, "teamd status, daemon up / node -e 0"),
      ratio("startup.teamd-exec.vs-node", hostMedian("exec"), floor, 3, "teamd exec SEAT -- true / node -e 0"),
      { name: "startup.seat-node.ms", value: seatFloor, unit: "ms", note: `node -e 0 inside a seat, timed by its shell: the floor there; ${runs}` },
      ratio("startup.shim-version.vs-node", seatMedian("version"), seatFloor, 1.5, "teamd-shim --version / node -e 0, inside the same seat"),
      ratio("startup.shim-whoami.vs-node", seatMedian("whoami"), seatFloor, 2, "teamd-shim whoami / node -e 0, inside the same seat"),
      ratio(
        "startup.push-1mib.vs-local",
        seatMedian("push-teamd"),
        seatMedian("push-local"),
        2,
        "git push teamd of a fresh 1 MiB commit / the same commit pushed to a bare repository in the seat",
      ),
      ratio(
        "startup.fetch-1mib.vs-local",
        seatMedian("fetch-teamd"),
        seatMedian("fetch-local"),
        2,
        "git fetch teamd of that commit / the same fetched from the bare repository, in the seat",
      ),
      { name: "startup.bwrap.ms", value: hostMedian("bwrap"), unit: "ms", note: `bwrap --ro-bind / / true, bare; ${runs}` },
    ];
    if (times.has("firejail"))
      rows.push({ name: "startup.firejail.ms", value: hostMedian("firejail"), unit: "ms", note: `firejail --noprofile true; ${runs}` });
    if (times.has("srt")) rows.push({ name: "startup.srt.ms", value: hostMedian("srt"), unit: "ms", note: `srt true (sandbox-runtime); ${runs}` });
    return rows;
  } finally {
    await stopChild(daemon);
    rmSync(dir, { recursive: true, force: true });
  }
}

function median(values: readonly number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
}

function onPath(command: string): boolean {
  return (process.env.PATH ?? "").split(delimiter).some((folder) => folder !== "" && spawnSync("test", ["-x", join(folder, command)]).status === 0);
}
