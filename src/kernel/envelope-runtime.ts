import { refuse, type Refusal } from "./decision.js";
import type { Policy } from "./policy.js";
import { showDuration } from "./delegation-input.js";

/**
 * The resource envelope's unattended runtime (§8): the time since the last owner-signed act
 * that renews the team — an apply of its file, `teamd renew --team T` — and nothing else (not a
 * restart, not a resume, not a lease, not any seat's act). At the limit the team is paused:
 * every gated act and start of the team is refused from that instant, by the daemon's clock.
 *
 * A team a seat created (§10) mints no fresh runtime: until the owner's own act on it, it runs to
 * the deadline it inherited at create time (the creator's remainder, or the bound's window), and
 * its own file's limit, counted from its creation, can only bring that nearer.
 */
export interface RuntimeClock {
  /** The owner's last renewal (for a created team not yet renewed by the owner: its creation). */
  readonly renewedAt: number;
  /** A created team's inherited deadline, until the owner renews it. */
  readonly deadline?: number;
}

export function runtimeLeftMs(policy: Pick<Policy, "ceiling">, clock: RuntimeClock, now: number): number | undefined {
  const limit = policy.ceiling?.runtimeMs;
  const own = limit === undefined ? undefined : clock.renewedAt + limit - now;
  const inherited = clock.deadline === undefined ? undefined : clock.deadline - now;
  if (own === undefined) return inherited;
  return inherited === undefined ? own : Math.min(own, inherited);
}

/** The whole window the team runs in (for display): its own limit, or what it inherited at creation, whichever ends first. */
export function runtimeWindowMs(policy: Pick<Policy, "ceiling">, clock: RuntimeClock): number | undefined {
  const limit = policy.ceiling?.runtimeMs;
  const inherited = clock.deadline === undefined ? undefined : clock.deadline - clock.renewedAt;
  if (limit === undefined) return inherited;
  return inherited === undefined ? limit : Math.min(limit, inherited);
}

export function runtimeRefusal(policy: Pick<Policy, "ceiling">, clock: RuntimeClock, now: number): Refusal | undefined {
  const left = runtimeLeftMs(policy, clock, now);
  if (left === undefined || left > 0) return undefined;
  if (
    clock.deadline !== undefined &&
    clock.deadline <= now &&
    (policy.ceiling?.runtimeMs === undefined || clock.renewedAt + policy.ceiling.runtimeMs > clock.deadline)
  )
    return refuse(
      "envelope.runtime",
      "the team was created by a seat and has run down the runtime it inherited (§8: a create mints no fresh runtime); it is paused until the owner renews it (teamd renew --team TEAM, or teamd apply)",
    );
  return refuse(
    "envelope.runtime",
    `the team has run unattended for its whole runtime (${showDuration(policy.ceiling?.runtimeMs ?? 0)} since the owner last renewed it); it is paused until the owner renews it (teamd renew --team TEAM, or teamd apply)`,
  );
}
