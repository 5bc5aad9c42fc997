import type { MessageInitShape } from "@bufbuild/protobuf";
import type { AttachRequest, AttachResponseSchema } from "../../src/gen/teamd/v1/control_pb.js";
import { AsyncQueue } from "../../src/rpc/async-queue.js";
import { checkName } from "../host/names.js";
import type { SeatManager } from "../lifecycle/manager.js";

type Out = MessageInitShape<typeof AttachResponseSchema>;

/**
 * One `teamd attach` on the daemon's side: the first message names the seat; then the
 * ready message, the scrollback, and the seat's output as it comes, while keystrokes and
 * window sizes flow the other way. The owner ending its side is the detach; so is the call
 * going away. A stalled owner loses live output past RELAY_CAP (the seat never waits for
 * an attacher; the scrollback keeps the last 64 KiB).
 */
const RELAY_CAP = 1024 * 1024;

export async function* attachSession(manager: SeatManager, requests: AsyncIterable<AttachRequest>, signal: AbortSignal): AsyncGenerator<Out> {
  const iterator = requests[Symbol.asyncIterator]();
  const first = await iterator.next();
  if (first.done === true || first.value.input.case !== "open") throw new Error("attach: the first message must name the seat (open)");
  const open = first.value.input.value;
  const seat = checkName("seat", open.seat);
  const team = open.team === "" ? undefined : checkName("team", open.team);
  const size = { cols: open.size?.cols ?? 0, rows: open.size?.rows ?? 0 };
  // With a command, teamd exec -t: the command in a pty of its own, ended when the owner leaves.
  // With a port, teamd forward: one connection to that port on the seat's own loopback.
  const attachment =
    open.forwardPort > 0
      ? await manager.forward(team, seat, open.forwardPort)
      : open.command.length > 0
        ? await manager.execTty(team, seat, open.command, size, { timeoutMs: open.noTimeout ? "none" : open.timeoutMs })
        : await manager.attach(team, seat, size);
  let how = "detached by the owner";
  const queue = new AsyncQueue<Out>();
  const sizeOf = (out: Out) => (out.output?.case === "data" ? (out.output.value as Uint8Array).byteLength : 0);
  attachment.onData((chunk) => {
    if (queue.bytes + chunk.length <= RELAY_CAP) queue.push({ output: { case: "data", value: chunk } }, chunk.length);
    else if (attachment.lossless === true) {
      // A byte stream must not lose bytes: an owner this far behind ends it instead.
      how = `closed: the owner's side fell ${RELAY_CAP / 1024 / 1024} MiB behind`;
      queue.close();
    }
  });
  void attachment.ended.then((ended) => {
    how = `the seat's command ended (${ended})`;
    queue.push({ output: { case: "ended", value: ended } });
    queue.close();
  });
  const onAbort = () => {
    how = "the owner's connection went away";
    queue.close();
  };
  signal.addEventListener("abort", onAbort, { once: true });
  void (async () => {
    for (;;) {
      const next = await iterator.next();
      if (next.done === true) break;
      const input = next.value.input;
      if (input.case === "keys") attachment.write(input.value);
      else if (input.case === "resize") attachment.resize(input.value.cols, input.value.rows);
    }
    // A byte stream's owner side ended cleanly: a half-close, and the answer still comes back.
    if (attachment.endInput !== undefined) return attachment.endInput();
    queue.close();
  })().catch(() => queue.close());
  try {
    yield {
      output: {
        case: "ready",
        value: {
          team: attachment.view.team,
          seat: attachment.view.seat,
          containment: attachment.view.containment,
          seq: BigInt(attachment.seq),
          scrollback: attachment.scrollback.length,
        },
      },
    };
    if (attachment.scrollback.length > 0) yield { output: { case: "data", value: attachment.scrollback } };
    yield* queue.drain(sizeOf);
    // Said explicitly, after the record: the owner's client leaves on it.
    await attachment.detach(how);
    yield { output: { case: "detached", value: how } };
  } finally {
    signal.removeEventListener("abort", onAbort);
    await attachment.detach(how);
  }
}
