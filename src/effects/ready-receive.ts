import { startReceive, type ReceiveStart, type StartedReceive } from "./git-receive.js";

/**
 * A push's receive started before the push comes (issue 26): when a seat lists refs for a push,
 * its quarantine, contained index-pack and read sandbox start while the seat's git makes the
 * pack (the longest wait of a push), as a fetch's pack-objects starts at its listing
 * (git-serve.ts's startReadyPack). They hold no data until a push takes them and its pack is in,
 * admitted and scanned (receivePack). Untaken, they are stopped after `idleMs`; one whose
 * index-pack has ended already, or that is not the receive the push would start (another
 * repository, other limits or bounds), is stopped and not used — the push starts its own.
 */
export interface ReadyReceive {
  /** `ready` until taken (then `taken`) or stopped (then `gone`). */
  readonly state: "ready" | "taken" | "gone";
  /** Settles once it holds nothing of its own: taken, or stopped and its quarantine removed. */
  readonly ended: Promise<void>;
  /** Stops it unless it was taken (idempotent). */
  discard(): void;
  /** The receive, if it is the one of `shape` (receiveShape) and still waits; else it is stopped and undefined. */
  take(shape: string): StartedReceive | undefined;
}

/** Where a receive reads and what bounds it, as one string: a ready receive serves only a push whose receive would be the same. */
export function receiveShape(hub: string, options: ReceiveStart): string {
  return JSON.stringify([hub, options.quarantineRoot, options.maxBytes, options.limits ?? null, options.timeoutMs ?? null, options.session ?? true]);
}

export async function startReadyReceive(hub: string, options: ReceiveStart & { readonly idleMs: number }): Promise<ReadyReceive> {
  const { idleMs, ...start } = options;
  const shape = receiveShape(hub, start);
  const receive = await startReceive(hub, start);
  let state: "ready" | "taken" | "gone" = "ready";
  let stopped: () => void = () => undefined;
  const ended = new Promise<void>((resolve) => (stopped = resolve));
  const discard = () => {
    if (state !== "ready") return;
    state = "gone";
    clearTimeout(idle);
    void receive
      .stopIndexing()
      .then(() => receive.quarantine.dispose())
      .catch(() => undefined)
      .finally(stopped);
  };
  // An index-pack that ended unfed (killed, out of the seat's processes) is no receive to give.
  void receive.indexing.then(discard, discard);
  const idle = setTimeout(discard, idleMs);
  idle.unref();
  return {
    get state() {
      return state;
    },
    ended,
    discard,
    take(wanted) {
      if (state !== "ready" || wanted !== shape) {
        discard();
        return undefined;
      }
      state = "taken";
      clearTimeout(idle);
      stopped();
      return receive;
    },
  };
}
