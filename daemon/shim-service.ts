import type { ShimService } from "../src/gen/teamd/v1/shim_pb.js";
import { PROTOCOL_VERSION, TEAMD_VERSION, type ServiceImpl } from "../src/rpc/index.js";

export interface SeatIdentity {
  readonly team: string;
  readonly seat: string;
}

/**
 * The seat-facing service for one seat's socket. The identity is closed over when the
 * socket is created: nothing in a request can name another seat.
 */
export function createShimService(identity: SeatIdentity, daemonInstance: string): ServiceImpl<typeof ShimService> {
  return {
    async hello() {
      return { daemon: { protocol: PROTOCOL_VERSION, program: TEAMD_VERSION } };
    },
    async whoAmI() {
      return { seat: identity.seat, team: identity.team, daemonInstance };
    },
  };
}
