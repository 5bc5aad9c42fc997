import type { ControlService } from "../src/gen/teamd/v1/control_pb.js";
import { PROTOCOL_VERSION, TEAMD_VERSION, type ServiceImpl } from "../src/rpc/index.js";
import type { Mode, TeamdHome } from "./home.js";
import { handleOwnerAct, type LedgerSlot } from "./owner-acts.js";
import { describeLedger } from "./ledger-host.js";

export interface ControlState {
  readonly daemonInstance: string;
  readonly mode: Mode;
  readonly home: string;
  readonly teamdHome: TeamdHome;
  readonly ledger: LedgerSlot;
  readonly daemonPublicKey: Uint8Array;
  seats(): ReadonlyArray<{ seat: string; team: string; socket: string }>;
}

/** The owner-facing service, served only on the control socket. */
export function createControlService(state: ControlState): ServiceImpl<typeof ControlService> {
  return {
    async hello() {
      return { daemon: { protocol: PROTOCOL_VERSION, program: TEAMD_VERSION } };
    },
    async whoAmI() {
      return { principal: "owner", daemonInstance: state.daemonInstance };
    },
    async status() {
      return {
        daemon: { protocol: PROTOCOL_VERSION, program: TEAMD_VERSION },
        daemonInstance: state.daemonInstance,
        pid: process.pid,
        mode: state.mode,
        home: state.home,
        seats: state.seats().map((s) => ({ ...s })),
      };
    },
    async ownerAct(request) {
      const receipt = await handleOwnerAct(state.teamdHome, state.ledger, request.kind, request.act);
      return { seq: BigInt(receipt.seq), created: receipt.created };
    },
    async ledgerStatus() {
      return describeLedger(state.ledger.get(), state.daemonPublicKey);
    },
  };
}
