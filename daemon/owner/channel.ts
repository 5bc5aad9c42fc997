import { create } from "@bufbuild/protobuf";
import {
  ControlService,
  LedgerStatusResponseSchema,
  PolicyInForceResponseSchema,
  type LeasesResponse,
  type LedgerStatusResponse,
  type OwnerActKind,
  type PolicyInForceResponse,
} from "../../src/gen/teamd/v1/control_pb.js";
import { createRpcClient } from "../../src/rpc/client.js";
import { DaemonUnavailableError } from "../../src/rpc/errors.js";
import type { Ledger } from "../../src/ledger/index.js";
import type { TeamdHome } from "../host/home.js";
import { daemonKey, describeLedger, ledgerLayout, openHostLedger } from "../host/ledger-host.js";
import { handleOwnerAct, type ActReceipt } from "./acts.js";
import { describeLeases } from "./leases.js";

/**
 * How an owner act reaches the ledger. Through the daemon's control socket when it answers;
 * in user mode with the daemon down, the CLI opens the ledger itself (one writer: the
 * ledger's lock refuses a second) and runs the very same handler. In system mode every owner
 * act goes through the daemon (DESIGN.md "Modes").
 */
export interface OwnerChannel {
  readonly via: "daemon" | "direct";
  /** `progress`: a long act's lines on its way (only when the CLI carries the act itself). */
  submit(kind: OwnerActKind, act: Uint8Array, progress?: (line: string) => void): Promise<ActReceipt>;
  ledgerStatus(): Promise<LedgerStatusResponse>;
  /** The team's applied policy as recorded (applied false: none yet). */
  policyInForce(team: string): Promise<PolicyInForceResponse>;
  /** The team's leases with their liveness now. */
  leases(team: string): Promise<LeasesResponse>;
  /** The stops on record with no flag file (leads's stop of its team, §9), which a resume names by `seq:N`. */
  recordedStops(): Promise<{ flagId: string; scope: string; team: string }[]>;
  close(): Promise<void>;
}

/** The policy record in force, read from a ledger view (the daemon's, or the CLI's own in direct mode). */
export function describePolicyInForce(ledger: Ledger | undefined, team: string): PolicyInForceResponse {
  const inForce = ledger?.view.policy(team);
  if (inForce === undefined) return create(PolicyInForceResponseSchema, { applied: false });
  return create(PolicyInForceResponseSchema, {
    applied: true,
    seq: BigInt(inForce.seq),
    teamFileHash: `sha256:${inForce.teamFileHash}`,
    canonical: inForce.canonical,
    startFileHashes: { ...inForce.startFileHashes },
    ownerSeq: BigInt(inForce.ownerSeq),
    delegated: inForce.delegated.map((d) => ({
      seq: BigInt(d.seq),
      kind: d.kind,
      change: d.change,
      signer: d.signer,
      coAuthorizer: d.coAuthorizer ?? "",
      timeUnixMs: BigInt(d.timeUnixMs),
    })),
  });
}

async function daemonChannel(home: TeamdHome, deadlineMs: number): Promise<OwnerChannel | undefined> {
  const client = createRpcClient(ControlService, home.controlSocket, { deadlineMs });
  try {
    await client.hello({});
  } catch (error) {
    client.close();
    if (error instanceof DaemonUnavailableError) return undefined;
    throw error;
  }
  return {
    via: "daemon",
    async submit(kind, act) {
      const reply = await client.ownerAct({ kind, act });
      return { seq: Number(reply.seq), created: reply.created };
    },
    ledgerStatus: () => client.ledgerStatus({}),
    policyInForce: (team) => client.policyInForce({ team }),
    leases: (team) => client.leases({ team }),
    recordedStops: async () => (await client.status({})).stops.filter((s) => s.flagId.startsWith("seq:")),
    async close() {
      client.close();
    },
  };
}

async function directChannel(home: TeamdHome, now: () => number): Promise<OwnerChannel> {
  const signer = await daemonKey(ledgerLayout(home));
  let ledger: Ledger | undefined = await openHostLedger(home);
  const slot = { get: () => ledger, set: (l: Ledger) => void (ledger = l) };
  return {
    via: "direct",
    submit: (kind, act, progress) => handleOwnerAct(home, slot, kind, act, now, progress),
    ledgerStatus: async () => create(LedgerStatusResponseSchema, describeLedger(ledger, signer.publicKey.raw)),
    policyInForce: async (team) => describePolicyInForce(ledger, team),
    leases: async (team) => describeLeases(ledger, team, now()),
    recordedStops: async () =>
      ledger?.state.status === "ready"
        ? ledger.view
            .activeStops()
            .filter((s) => s.flagId.startsWith("seq:"))
            .map((s) => ({ flagId: s.flagId, scope: s.scope, team: s.team }))
        : [],
    async close() {
      await ledger?.close();
      ledger = undefined;
    },
  };
}

/**
 * `now`: the CLI's clock, for the acts it decides itself when the daemon is down (from the program's entry).
 * `deadlineMs`: how long a call to the daemon may take (30 s; an archive of a long history takes longer).
 */
export async function openOwnerChannel(home: TeamdHome, now: () => number, options: { readonly deadlineMs?: number } = {}): Promise<OwnerChannel> {
  const viaDaemon = await daemonChannel(home, options.deadlineMs ?? 30_000);
  if (viaDaemon) return viaDaemon;
  if (home.mode === "system") {
    throw new DaemonUnavailableError(
      home.controlSocket,
      "in system mode every owner act goes through the daemon; start it (systemctl start teamd, or teamd serve)",
    );
  }
  return directChannel(home, now);
}
