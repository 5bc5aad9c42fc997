import { readdirSync } from "node:fs";
import type { Flag, FlagRead } from "../../src/ledger/index.js";

/**
 * The daemon acts on a stop flag it did not raise (§11, §15). The owner's `teamd stop --all`
 * writes its flag itself and then asks the daemon; when the daemon does not answer (hung) the
 * CLI kills the seats it can — but an owner without root cannot signal a system-mode seat,
 * and a daemon that comes back must not let seats started before the stop run on. So the
 * daemon watches the flags folder: a machine-wide stop flag it has not acted on makes it
 * stop every seat and record the stop, exactly as if it had been asked (handleStopAll is
 * idempotent: the flag is already raised, a recorded stop is not recorded twice).
 *
 * A poll of the folder's names (cheap: a readdir) every `intervalMs`; flags are read and
 * verified only when the names change or a flag waits out its grace. Flags present at start
 * are taken as handled: no seat runs yet, and every start is refused while they stand.
 */
export interface StopWatch {
  /** The daemon acted on this flag itself (the owner asked it: StopAll); the watch leaves it. */
  handled(flagId: string): void;
  close(): void;
}

/**
 * How long a new flag is left to the owner's own request before the watch acts on it: the
 * CLI writes the flag, then asks the daemon (it waits 2 s for the answer), so a daemon that
 * answers handles the stop in the request, and the watch does not act twice.
 */
const GRACE_MS = 3_000;

export function watchStopFlags(options: {
  readonly flagsDir: string;
  readonly read: () => FlagRead | undefined;
  readonly onStop: (flag: Flag) => Promise<void>;
  readonly log: (line: string) => void;
  /** The daemon's clock, unix ms: a new flag's grace is counted on it. */
  readonly now: () => number;
  readonly intervalMs?: number;
  readonly graceMs?: number;
}): StopWatch {
  const names = () => {
    try {
      return readdirSync(options.flagsDir).sort().join("\n");
    } catch {
      return "";
    }
  };
  const machineStops = () => (options.read()?.flags ?? []).filter((f) => f.kind === "stop" && f.scope === "machine");
  const handled = new Set(machineStops().map((f) => f.id));
  // Flags seen and not yet handled, with when this daemon first saw them.
  const waiting = new Map<string, number>();
  let seen = names();
  let busy = false;
  const tick = () => {
    if (busy) return;
    const now = names();
    if (now !== seen || waiting.size > 0) {
      seen = now;
      for (const f of machineStops()) if (!handled.has(f.id) && !waiting.has(f.id)) waiting.set(f.id, options.now());
    }
    const due = [...waiting].filter(([id, since]) => !handled.has(id) && options.now() - since >= (options.graceMs ?? GRACE_MS)).map(([id]) => id);
    for (const id of waiting.keys()) if (handled.has(id)) waiting.delete(id);
    if (due.length === 0) return;
    const fresh = machineStops().filter((f) => due.includes(f.id));
    for (const id of due) waiting.delete(id);
    if (fresh.length === 0) return;
    busy = true;
    (async () => {
      for (const flag of fresh) {
        handled.add(flag.id);
        options.log(`a machine-wide stop flag appeared (${flag.id.slice(0, 12)}): stopping every seat`);
        await options
          .onStop(flag)
          .catch((error: unknown) =>
            options.log(`acting on stop flag ${flag.id.slice(0, 12)} failed: ${error instanceof Error ? error.message : String(error)}`),
          );
      }
    })().finally(() => {
      busy = false;
    });
  };
  const timer = setInterval(tick, options.intervalMs ?? 500);
  timer.unref();
  return {
    handled(flagId: string) {
      handled.add(flagId);
      waiting.delete(flagId);
    },
    close() {
      clearInterval(timer);
    },
  };
}
