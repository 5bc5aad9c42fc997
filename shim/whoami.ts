import type { Socket } from "node:net";
import { createRpcClient } from "../src/rpc/client.js";
import { leaseJson } from "../src/rpc/lease-view.js";
import { socketPath } from "./seat-socket.js";
import { WhoAmIService, whoAmICalls } from "./whoami-service.js";

/**
 * `teamd-shim whoami`: the seat's view of itself (§3), asked of the daemon and printed. A module of
 * its own, which agents run in loops (issue 26): it holds no more of the shim's service than its
 * one method (whoami-service.ts), so it builds none of shim.proto's other messages.
 */

/** The socket the front connected for whoami, and its call, already written there (main.ts). */
export interface FirstCalls {
  readonly socket: Socket;
  readonly sent: Buffer;
}

const ADMIN_HINT: Record<string, string> = {
  grant: "teamd-shim grant | ungrant | seat add | confirm",
  agree: "teamd-shim seat add NEW --like SEAT (a same copy)",
  leads: "the delegation envelope's root (teamd-shim lease issue)",
};

/** `first`: its call, already written by the front (main.ts). */
export async function whoami(opts: { json?: boolean }, first?: FirstCalls): Promise<void> {
  const client = createRpcClient(WhoAmIService, socketPath(), {
    deadlineMs: 30_000,
    ...(first !== undefined ? { socket: first.socket, sent: { bytes: first.sent, calls: whoAmICalls() } } : {}),
  });
  const reply = await client.whoAmI().finally(() => client.close());
  const value = {
    seat: reply.seat,
    team: reply.team,
    daemonInstance: reply.daemonInstance,
    policySeq: Number(reply.policySeq),
    capabilities: reply.capabilities.map((c) => ({ capability: c.capability, scope: c.scope, source: c.source })),
    leases: reply.leases.map(leaseJson),
    lastRefusal: reply.lastRefusalRule ? { rule: reply.lastRefusalRule, reason: reply.lastRefusalReason } : null,
    containment: reply.containment || null,
    review: reply.reviewMode ? { mode: reply.reviewMode, floor: reply.reviewFloor } : null,
    administrative: [...reply.administrative],
  };
  const lines = [
    `seat ${reply.seat} of team ${reply.team} (${value.policySeq > 0 ? `policy record ${value.policySeq}` : "no policy in force"})`,
    ...(reply.containment === "none"
      ? ["containment: none (UNCONTAINED: this seat can reach everything its host user can; teamd's refusals hold against a mistake only)"]
      : reply.containment
        ? [`containment: ${reply.containment}`]
        : []),
    ...(value.review ? [`review mode: ${value.review.mode}, floor ${value.review.floor}`] : []),
    ...value.capabilities.map((c) => `  ${c.capability} ${c.scope}  [${c.source}]`),
    ...value.administrative.map((a) => `  ${a}  [administrative: ${ADMIN_HINT[a] ?? "§9"}]`),
    ...value.leases.map((l) => `  ${l.capability} ${l.scope}  [lease ${l.leaseId} from ${l.issuer}, until ${new Date(l.expiresUnixMs).toISOString()}]`),
    value.lastRefusal ? `last refusal: ${value.lastRefusal.rule}: ${value.lastRefusal.reason}` : "no refusal yet",
  ];
  process.stdout.write(opts.json ? `${JSON.stringify(value)}\n` : `${lines.join("\n")}\n`);
}
