import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createCrashLedger, runCrashRound, type CrashRound } from "../../scripts/ledger-soak.js";

/**
 * Crash: a real writer process (dist/scripts/ledger-soak.js --child, built by `npm run
 * build`) is killed with SIGKILL at random points, 200 times over 20 ledgers (each ledger
 * crashed 10 times in a row, so recovery runs on top of recovered state). After every kill:
 * every acknowledged record is present and unchanged, chain, seals, signatures and head
 * verify, integrity_check is ok, and each intent left without an outcome became `unknown`.
 * scripts/ledger-soak.ts runs the same rounds for longer.
 */
const ROUNDS_PER_LEDGER = 10;
const LEDGERS = 20;
const LANES = 2;

describe("crash", () => {
  it(`kill -9 a writer at random points: ${ROUNDS_PER_LEDGER * LEDGERS} rounds`, async () => {
    const child = fileURLToPath(new URL("../../dist/scripts/ledger-soak.js", import.meta.url));
    expect(existsSync(child), `${child} is missing: run \`npm run build\` first`).toBe(true);
    const results: CrashRound[] = [];
    await Promise.all(
      Array.from({ length: LANES }, async (_, lane) => {
        for (let l = lane; l < LEDGERS; l += LANES) {
          const root = mkdtempSync(join(tmpdir(), "teamd-crash-"));
          try {
            await createCrashLedger(root);
            for (let r = 0; r < ROUNDS_PER_LEDGER; r++) {
              const seed = 424_242 + l * 1000 + r;
              try {
                results.push(await runCrashRound(root, seed));
              } catch (error) {
                throw new Error(`crash round seed ${seed}: ${(error as Error).message}`);
              }
            }
          } finally {
            rmSync(root, { recursive: true, force: true });
          }
        }
      }),
    );
    expect(results).toHaveLength(ROUNDS_PER_LEDGER * LEDGERS);
    // The kills landed where they matter: acknowledged records were checked, intents were
    // caught without outcomes, and some kills came before the writer had even opened.
    const acked = results.reduce((n, r) => n + r.acked, 0);
    const orphans = results.reduce((n, r) => n + r.orphans, 0);
    expect(acked).toBeGreaterThan(500);
    expect(orphans).toBeGreaterThan(20);
    expect(results.filter((r) => !r.openedBeforeKill).length).toBeGreaterThan(3);
    console.log(`crash: ${results.length} rounds, ${acked} acknowledged records checked, ${orphans} intents recovered as unknown`);
  }, 300_000);
});
