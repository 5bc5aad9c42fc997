import { ControlService } from "../src/gen/teamd/v1/control_pb.js";
import { createRpcClient } from "../src/rpc/index.js";
import { resolveHome } from "./home.js";
import { unseenNotices } from "./notices-command.js";

/** `teamd status`: what the daemon serves, from the control socket. */
export async function status(options: { json?: boolean; socket?: string }): Promise<void> {
  const home = resolveHome();
  const socket = options.socket ?? home.controlSocket;
  const client = createRpcClient(ControlService, socket, { deadlineMs: 5000 });
  try {
    const reply = await client.status();
    // Read here from the ledger (read-only): the seen mark is the owner's, beside the ledger.
    const unseen = unseenNotices(home);
    if (options.json) {
      process.stdout.write(
        JSON.stringify({
          daemon: { protocol: reply.daemon?.protocol, version: reply.daemon?.program, instance: reply.daemonInstance, pid: reply.pid },
          mode: reply.mode,
          home: reply.home,
          notices: { unseen: unseen ?? null },
          seats: reply.seats.map((s) => ({ team: s.team, seat: s.seat, socket: s.socket, state: s.state, initPid: s.initPid, runId: s.runId, startedAt: s.startedAt, limits: s.limits, repository: s.repository, uid: s.uid, cgroup: s.cgroup, cpuMs: Number(s.cpuMs), memoryBytes: Number(s.memoryBytes), meteredBy: s.meteredBy })),
        }) + "\n",
      );
      return;
    }
    const lines = [
      `teamd ${reply.daemon?.program} (protocol ${reply.daemon?.protocol}), pid ${reply.pid}, ${reply.mode} mode`,
      `home: ${reply.home}`,
      unseen === undefined ? "notices: no ledger" : unseen === 0 ? "notices: none new" : `notices: ${unseen} not yet seen (teamd notices)`,
      reply.seats.length === 0 ? "seats: none" : "seats:",
      ...reply.seats.map((s) =>
        s.state === "socket" || s.state === ""
          ? `  ${s.seat}@${s.team}  socket only  ${s.socket}`
          : `  ${s.seat}@${s.team}  ${s.state}  init pid ${s.initPid}  uid ${s.uid}  since ${s.startedAt || "-"}  limits: ${s.limits}  cpu ${s.cpuMs} ms  memory ${(Number(s.memoryBytes) / 2 ** 20).toFixed(1)} MiB (${s.meteredBy || "not metered"}; cgroup ${s.cgroup})`,
      ),
    ];
    process.stdout.write(lines.join("\n") + "\n");
  } finally {
    client.close();
  }
}
