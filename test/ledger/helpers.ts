import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHash } from "node:crypto";
import {
  createDaemonSigner,
  genesisDraft,
  initLedger,
  openLedger,
  ownerPublicKey,
  signOwnerAct,
  type DaemonSigner,
  type Ledger,
  type LedgerOptions,
} from "../../src/ledger/index.js";
import { TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import { seatPrincipal } from "../../src/ledger/codec.js";
import type { SubmitRequest } from "../../src/ledger/dispatch.js";

/** Deterministic 32-byte seeds from a label: tests never depend on a random key. */
export function seedOf(label: string): Uint8Array {
  return new Uint8Array(createHash("sha256").update(`teamd-test-seed:${label}`).digest());
}

export interface TestEnv {
  readonly root: string;
  readonly dir: string;
  readonly flagsDir: string;
  readonly ownerSeed: Uint8Array;
  readonly ownerPublic: Uint8Array;
  readonly signer: DaemonSigner;
  readonly options: LedgerOptions;
  /** A manual clock: tests move it. */
  now: number;
  open(extra?: Partial<LedgerOptions>): Promise<Ledger>;
  cleanup(): void;
}

export async function makeEnv(label = "default", extra: Partial<LedgerOptions> = {}): Promise<TestEnv> {
  const root = mkdtempSync(join(tmpdir(), "teamd-ledger-"));
  const ownerSeed = seedOf(`owner:${label}`);
  const ownerPublic = await ownerPublicKey(ownerSeed);
  const signer = createDaemonSigner(seedOf(`daemon:${label}`));
  const env: TestEnv = {
    root,
    dir: join(root, "ledger"),
    flagsDir: join(root, "flags"),
    ownerSeed,
    ownerPublic,
    signer,
    now: 1_800_000_000_000,
    options: undefined as unknown as LedgerOptions,
    open: (more = {}) => openLedger({ ...env.options, ...more }),
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
  (env as { options: LedgerOptions }).options = {
    dir: env.dir,
    flagsDir: env.flagsDir,
    daemonSigner: signer,
    ownerPublicKey: ownerPublic,
    clock: () => env.now,
    reopenIntervalMs: 0,
    ...extra,
  };
  return env;
}

/** A fresh ledger with its genesis, open. */
export async function initEnv(label = "default", extra: Partial<LedgerOptions> = {}): Promise<{ env: TestEnv; ledger: Ledger }> {
  const env = await makeEnv(label, extra);
  const genesisAct = await signOwnerAct(
    genesisDraft({ ownerPublicKey: env.ownerPublic, daemonPublicKey: env.signer.publicKey.raw, ledgerId: seedOf(`ledger:${label}`).slice(0, 16) }),
    env.ownerSeed,
  );
  const { ledger, created } = await initLedger({ ...env.options, genesisAct });
  if (!created) throw new Error("expected a new ledger");
  return { env, ledger };
}

export function request(seat: string, requestId: string, body = "merge feature into main", team = "alpha"): SubmitRequest {
  return {
    actor: seatPrincipal(team, seat),
    team,
    requestId,
    request: new TextEncoder().encode(body),
    action: "merge",
    target: { kind: TargetKind.REF, name: "refs/heads/main" },
  };
}

export function expectState(ledger: Ledger, status: string, rule?: string): void {
  const state = ledger.state;
  if (state.status !== status || (rule !== undefined && (state.status !== "blocked" || state.rule !== rule))) {
    throw new Error(
      `expected ${status}${rule ? ` (${rule})` : ""}, got ${JSON.stringify(state.status === "blocked" ? { ...state, observation: undefined } : state)}`,
    );
  }
}
