import type { Refusal } from "../kernel/decision.js";
import { isAtOrUnder, isCanonicalAbsolute } from "../objects/paths.js";
import type { EgressInput, MountOp, PlanEgress, ReservedFact } from "./plan-types.js";
import { refuseContainment } from "./refusal.js";

/**
 * A seat's egress in its plan (pure, §12). The seat's network namespace holds loopback only;
 * a seat whose execution context declares egress gets, inside that namespace, the shim's
 * proxy on 127.0.0.1:3128 and the env that points clients at it. The proxy is started by the
 * seat's launcher — a small program (shim/egress.ts, its own bundle: no gRPC to load) that
 * binds the proxy's port and spawns the seat's command as its child once it listens, so every
 * command run in this plan (`teamd start` and `teamd exec` alike, each its own namespace)
 * finds the proxy listening. Each proxied connection goes to the daemon over the seat's
 * egress socket (/run/teamd/egress.sock), where it is decided (daemon/seat/egress.ts).
 * What it takes and gives (EgressInput, PlanEgress) is plan data, in plan-types.ts.
 */

export const EGRESS_INSIDE = Object.freeze({ socket: "/run/teamd/egress.sock", launcher: "/run/teamd/egress.mjs" });
export const EGRESS_PROXY = "127.0.0.1:3128";

/** Names every common client reads (curl, git, npm, pip, Node agents): both cases. */
export function egressEnv(): Record<string, string> {
  const url = `http://${EGRESS_PROXY}`;
  const env: Record<string, string> = {};
  for (const name of ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"]) {
    env[name] = url;
    env[name.toLowerCase()] = url;
  }
  // Loopback inside the seat is the seat's own: never proxied.
  env.NO_PROXY = env.no_proxy = "localhost,127.0.0.1,::1";
  return env;
}

export function egressMounts(input: EgressInput, node: string, reserved: readonly ReservedFact[]): { mounts: MountOp[]; egress: PlanEgress } | Refusal {
  for (const [what, path] of [
    ["egress socket", input.socket],
    ["egress launcher", input.launcher],
  ] as const) {
    if (!isCanonicalAbsolute(path))
      return refuseContainment("containment.undecidable", `the ${what} path '${path}' is not canonical`, "give the plan canonical paths");
    const covering = reserved.find((o) => isAtOrUnder(o.path, path) || isAtOrUnder(path, o.path));
    if (covering)
      return refuseContainment(
        "reserved.object",
        `the ${what} ${path} overlaps the reserved ${covering.path}`,
        "keep the egress socket and launcher outside reserved folders",
      );
  }
  return {
    mounts: [
      { op: "ro-bind", src: input.launcher, dest: EGRESS_INSIDE.launcher },
      { op: "bind", src: input.socket, dest: EGRESS_INSIDE.socket },
    ],
    egress: { socket: { host: input.socket, inside: EGRESS_INSIDE.socket }, argv: [node, EGRESS_INSIDE.launcher, "--"], proxy: EGRESS_PROXY },
  };
}
