import { UsageError } from "../../src/rpc/errors.js";
import { CORPUS } from "../../src/selftest/corpus.js";
import { buildMap, renderMap, SELFTEST_SCHEMA, statusOf, type SelftestDocument } from "../../src/selftest/map.js";
import { ENFORCEMENT_ROWS } from "../../src/selftest/rows.js";
import { FAULTS, runCorpus, type Fault } from "../../src/selftest/runner.js";
import type { Ambient } from "../host/ambient.js";
import { resolveHome, SYSTEM_HOME } from "../host/home.js";
import { hostFingerprint, writeSelftestRecord } from "../host/selftest-record.js";
import { lookupUser, SEAT_SYSTEM_USER } from "../host/users.js";

/**
 * `teamd selftest`: the corpus (src/selftest/corpus.ts) run on this machine in throwaway seats, and
 * the enforcement map for this host — each row of docs/enforcement.md, what holds here and the attack
 * that proved it, what differs and why. Recorded in TEAMD_HOME (host/selftest-record.ts) for start,
 * status and doctor. Exit 0 only when every row holds as documented; 1 otherwise; 2 for a usage error.
 *
 * The test harness may break one defence of the selftest's own seat (TEAMD_TEST_SELFTEST_FAULT) to
 * prove a broken host is caught. It is refused unless the process runs under vitest (VITEST=true,
 * which vitest sets) and on a home of its own (never the system home): a fault can only make the
 * run fail, and it never reaches a seat `teamd start` plans.
 */
export const FAULT_ENV = "TEAMD_TEST_SELFTEST_FAULT";

export function faultFromEnv(env: NodeJS.ProcessEnv, home: string): Fault | undefined {
  const asked = env[FAULT_ENV];
  if (asked === undefined || asked === "") return undefined;
  if (env.VITEST !== "true" || home === SYSTEM_HOME || env.TEAMD_HOME === undefined) {
    throw new UsageError(`${FAULT_ENV} is a test-only hook (it breaks a defence on purpose): refused outside the test harness; unset it`);
  }
  if (!(FAULTS as readonly string[]).includes(asked)) throw new UsageError(`${FAULT_ENV}=${asked}: not one of ${FAULTS.join(", ")}`);
  return asked as Fault;
}

export async function selftestCommand(options: { json?: boolean; only?: string[] }, ambient: Ambient): Promise<void> {
  if (process.platform !== "linux") {
    process.stderr.write(`teamd selftest: containment on ${process.platform} is not supported yet: nothing to attack\n`);
    process.exitCode = 1;
    return;
  }
  const home = resolveHome();
  const fault = faultFromEnv(process.env, home.root);
  const known = new Set([...CORPUS.map((a) => a.id), ...ENFORCEMENT_ROWS.filter((r) => r.basis.kind === "host-attacks").map((r) => r.id)]);
  const only = options.only?.length ? options.only : undefined;
  const unknown = (only ?? []).filter((id) => !known.has(id));
  if (unknown.length) throw new UsageError(`--only: no such row or attack: ${unknown.join(", ")} (rows and attacks: ${[...known].join(", ")})`);

  let user: { uid: number; gid: number };
  if (process.getuid?.() === 0) {
    // As root, seats never run as root: the seat system user, as `teamd start` runs them.
    const found = lookupUser(SEAT_SYSTEM_USER);
    if (found === undefined) {
      process.stderr.write(`teamd selftest: running as root and no '${SEAT_SYSTEM_USER}' user to run seats as\n  fix: run scripts/setup.sh as root\n`);
      process.exitCode = 1;
      return;
    }
    user = { uid: found.uid, gid: found.gid };
  } else user = { uid: process.getuid?.() ?? -1, gid: process.getgid?.() ?? -1 };

  const started = ambient.now();
  const run = await runCorpus({ user, ...(fault ? { fault } : {}), ...(only ? { only } : {}) });
  const attacks = run.attacks;
  const fingerprint = hostFingerprint();
  const doc: SelftestDocument = {
    schema: SELFTEST_SCHEMA,
    status: run.leftovers.length ? "failed" : statusOf(attacks),
    host: { ...fingerprint, mode: process.getuid?.() === 0 ? "system" : "user", seatUid: user.uid },
    startedAt: new Date(started).toISOString(),
    durationMs: ambient.now() - started,
    ...(only ? { only } : {}),
    ...(fault ? { fault } : {}),
    rows: buildMap(attacks),
    attacks,
    leftovers: run.leftovers,
  };

  // A partial run proves only its rows: it is kept when it fails (fail closed), never to clear a failure.
  let recorded = "";
  if (only === undefined || doc.status === "failed") {
    try {
      writeSelftestRecord(home, doc);
      recorded = `recorded in ${home.root}`;
    } catch (error) {
      recorded = `not recorded: ${(error as Error).message} (the home's owner records it: ${home.mode === "system" ? "run it as root" : "check TEAMD_HOME"})`;
    }
  } else recorded = "not recorded (a partial run)";

  if (options.json) process.stdout.write(JSON.stringify(doc) + "\n");
  else process.stdout.write(renderMap(doc) + `${recorded}\n`);
  if (options.json && recorded.startsWith("not recorded:")) process.stderr.write(`teamd selftest: ${recorded}\n`);
  if (doc.status !== "passed") process.exitCode = 1;
}
