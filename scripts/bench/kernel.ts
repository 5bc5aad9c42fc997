import { createKernelView } from "../../src/kernel/view.js";
import type { KernelRequest } from "../../src/kernel/request.js";
import { loadTeamFileData } from "../../src/teamfile/load.js";
import { percentile, type BenchRow } from "./report.js";
import { timeAuthorize } from "./time-authorize.js";

/**
 * `authorize` latency on a team of 100 seats with 20 roles (issue 4): the decision must never
 * show in a request's latency (target: p99 ≤ 5% of the grpc-js echo p50 from the same run;
 * main.ts sets the two side by side). The request mix is the pipeline's: allowed writes and
 * reads, refusals on scope and on the reserved set, mixed-scope changes, and trunk acts whose
 * scope is covered (refused at the act-time stage until issue 5). Deterministic: the same
 * team and requests every run.
 */
const SEATS = 100;
const ROLES = 20;
const WARMUP = 20_000;
const CALLS = 200_000;

const AREAS = ["docs", "src/api", "src/web", "src/core", "lib", "infra", "tests", "scripts", "packages/a", "packages/b"];
const BRANCHES = ["main", "develop", "release/*", "feature/*"];

function buildTeam(): unknown {
  const roles: Record<string, unknown> = {};
  for (let r = 0; r < ROLES; r++) {
    const area = AREAS[r % AREAS.length] as string;
    const other = AREAS[(r + 3) % AREAS.length] as string;
    roles[`role-${r}`] =
      r % 4 === 0
        ? { template: "executor", scope: { path: [`${area}/`, `${other}/`] } }
        : r % 4 === 1
          ? { template: "verifier", scope: { path: `${area}/`, branch: r % 2 === 0 ? "main" : "release/*" } }
          : r % 4 === 2
            ? { capabilities: { write: [{ path: `${area}/` }, { path: `${other}/` }], read: { path: [`${area}/`, `${other}/`, "README.md"] } } }
            : { template: "operator", scope: { path: `${area}/`, branch: ["main", "develop"], env: "staging" } };
  }
  const seats: Record<string, unknown> = {};
  for (let s = 0; s < SEATS; s++) {
    seats[`seat-${s}`] = {
      lab: ["anthropic", "openai", "google"][s % 3],
      roles: [`role-${s % ROLES}`, `role-${(s * 7 + 3) % ROLES}`, ...(s % 5 === 0 ? ["observer"] : [])],
      capabilities: {
        write: { path: `${AREAS[(s + 5) % AREAS.length]}/` },
        ...(s % 10 === 0 ? { "act-as": { account: "github:acme-bot" }, "use-broker": { task: "linear:WEB" } } : {}),
      },
    };
  }
  return {
    version: 1,
    team: "bench",
    review: { mode: "distinct-seat" },
    declare: { branches: BRANCHES, envs: ["staging", "prod"], accounts: ["github:acme-bot"], tasks: ["linear:WEB"], labs: ["anthropic", "openai", "google"] },
    roles,
    seats,
  };
}

/** A small deterministic generator, so every run decides the same requests. */
function lcg(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x / 0x100000000;
  };
}

function buildRequests(count: number): KernelRequest[] {
  const next = lcg(42);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)] as T;
  const requests: KernelRequest[] = [];
  for (let i = 0; i < count; i++) {
    const s = Math.floor(next() * SEATS);
    const seat = `seat-${s}`;
    // Agents mostly work inside their own scope: 70% of requests name the seat's own area
    // (its direct write), the rest any area — which refusals of every kind then come from.
    const area = next() < 0.7 ? (AREAS[(s + 5) % AREAS.length] as string) : pick(AREAS);
    const paths = Array.from(
      { length: 1 + Math.floor(next() * 8) },
      (_, k) => `${next() < 0.9 ? area : pick(AREAS)}/module-${k}/file-${Math.floor(next() * 50)}.ts`,
    );
    const kind = next();
    if (kind < 0.45) requests.push({ seat, capability: "write", effect: { paths } });
    else if (kind < 0.7) requests.push({ seat, capability: "read", effect: { paths } });
    else if (kind < 0.75) requests.push({ seat, capability: "write", effect: { paths: [...paths, "teamd.yaml"] } });
    else if (kind < 0.9)
      requests.push({
        seat,
        capability: pick(["merge", "gate", "review"]),
        effect: { paths, branch: pick(["main", "develop", "refs/heads/release/2.1", "feature/x", "hotfix"]) },
      });
    else if (kind < 0.95) requests.push({ seat, capability: "deploy", effect: { env: pick(["staging", "prod"]), branch: "main" } });
    else requests.push({ seat, capability: "write", effect: { paths }, asAccount: "github:acme-bot" });
  }
  return requests;
}

export async function benchKernel(): Promise<BenchRow[]> {
  const loadStart = process.hrtime.bigint();
  const loaded = loadTeamFileData(buildTeam());
  const loadUs = Number(process.hrtime.bigint() - loadStart) / 1000;
  if (!loaded.ok) throw new Error(`bench team file does not load: ${JSON.stringify(loaded.errors.slice(0, 3))}`);
  const view = createKernelView(loaded.policy);
  const requests = buildRequests(4096);
  const now = Date.UTC(2026, 9, 9);

  const { sorted, allowed } = timeAuthorize(view, requests, now, WARMUP, CALLS);
  const authorities = Object.values(loaded.policy.seats).reduce((n, s) => n + s.authorities.length, 0);
  const team = `${SEATS} seats, ${ROLES} roles, ${authorities} authorities; ${((allowed / CALLS) * 100).toFixed(0)}% allowed`;
  return [
    { name: "kernel.authorize.p50", value: percentile(sorted, 50), unit: "us", note: team },
    { name: "kernel.authorize.p99", value: percentile(sorted, 99), unit: "us", note: "target: ≤ 5% of rpc.bare-echo.p50 (same run)" },
    { name: "kernel.authorize.p999", value: percentile(sorted, 99.9), unit: "us", note: `${CALLS} calls after ${WARMUP} warm-up` },
    { name: "kernel.load-team-file", value: loadUs / 1000, unit: "ms", note: "loader: schema, compile, hashes, seal (100 seats)" },
  ];
}
