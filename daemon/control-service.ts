import type { ControlService } from "../src/gen/teamd/v1/control_pb.js";
import { PROTOCOL_VERSION, TEAMD_VERSION, type ServiceImpl } from "../src/rpc/index.js";
import type { Mode } from "./home.js";

export interface ControlState {
  readonly daemonInstance: string;
  readonly mode: Mode;
  readonly home: string;
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
  };
}
