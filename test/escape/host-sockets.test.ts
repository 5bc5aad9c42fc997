import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createServer, connect, type Server } from "node:net";
import type { AddressInfo } from "node:net";
import { connectCommand, createRealSeat, HOST_SERVICE_REPLY, SEAT_REPLY, type RealSeat } from "../sandbox/fixture/real-seat.js";

/**
 * Proves (docs/enforcement.md): "Containment (§11): a seat reaches no host unix socket
 * (filesystem or abstract) and no host loopback service; only its own socket to teamd".
 * notes/stack.md pitfall 4: a read-only bind does not stop connect(2) — so the controls
 * here show the same attack succeeding when the masks the plan adds are taken out.
 */
let seat: RealSeat;
const servers: Server[] = [];
beforeEach(async () => {
  seat = await createRealSeat();
});
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  await seat.cleanup();
});

async function serve(listen: (server: Server) => void): Promise<Server> {
  const server = createServer((socket) => socket.end(`${HOST_SERVICE_REPLY}\n`));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject).once("listening", () => resolve());
    listen(server);
  });
  servers.push(server);
  return server;
}

function hostConnect(options: { path: string } | { host: string; port: number }): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(options as never);
    let data = "";
    socket
      .on("data", (d) => (data += String(d)))
      .on("end", () => resolve(data))
      .on("error", (e: NodeJS.ErrnoException) => resolve(`error ${e.code}`));
  });
}

describe.runIf(process.platform === "linux")("escape: reach a host socket", () => {
  it("cannot connect to a host service's socket inside a read-only folder — though a read-only bind alone would allow it", async () => {
    expect(await hostConnect({ path: seat.hostServiceSocket })).toBe(`${HOST_SERVICE_REPLY}\n`); // control: live on the host
    const attack = await seat.run(connectCommand(seat.hostServiceSocket));
    expect(attack.stdout).toMatch(/^error (ECONNREFUSED|EACCES|ENOTSOCK)\n$/);
    // Control: the same seat without the plan's socket masks reaches the host service.
    const unmasked = await seat.plan((input) => ({
      ...input,
      readOnly: input.readOnly.map((root) => ({ ...root, scan: { ...root.scan, sockets: [] } })),
    }));
    const control = await seat.run(connectCommand(seat.hostServiceSocket), { plan: unmasked });
    expect(control.stdout).toBe(`${HOST_SERVICE_REPLY}\n`);
  });

  it("cannot connect to a socket outside the plan (the daemon's control socket stands in)", async () => {
    const decoy = `${seat.outside}/decoy.sock`;
    expect(await hostConnect({ path: decoy })).toBe(`${HOST_SERVICE_REPLY}\n`); // control
    const attack = await seat.run(connectCommand(decoy));
    expect(attack.stdout).toBe("error ENOENT\n");
  });

  it("cannot reach a host abstract unix socket (the seat has its own network namespace)", async () => {
    const name = `teamd-escape-${process.pid}-${Date.now()}`;
    await serve((server) => server.listen(`\0${name}`));
    expect(await hostConnect({ path: `\0${name}` })).toBe(`${HOST_SERVICE_REPLY}\n`); // control
    const attack = await seat.run(connectCommand(`@${name}`));
    expect(attack.stdout).toBe("error ECONNREFUSED\n");
  });

  it("cannot reach a service on the host's loopback", async () => {
    const server = await serve((s) => s.listen(0, "127.0.0.1"));
    const { port } = server.address() as AddressInfo;
    expect(await hostConnect({ host: "127.0.0.1", port })).toBe(`${HOST_SERVICE_REPLY}\n`); // control
    const attack = await seat.run(connectCommand(`tcp:127.0.0.1:${port}`));
    expect(attack.stdout).toBe("error ECONNREFUSED\n");
  });

  it("does reach its own socket to teamd, at /run/teamd/shim.sock", async () => {
    const out = await seat.run(connectCommand("/run/teamd/shim.sock"));
    expect(out.stdout).toBe(`${SEAT_REPLY}\n`);
  });
});
