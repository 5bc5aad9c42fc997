import { refuse, type Refusal } from "./decision.js";
import type { Policy } from "./policy.js";
import { showDuration } from "./delegation-input.js";

/**
 * The resource envelope's unattended runtime (§8): the time since the last owner-signed act
 * that renews the team — an apply of its file, `teamd renew --team T` — and nothing else (not a
 * restart, not a resume, not a lease, not any seat's act). At the limit the team is paused:
 * every gated act and start of the team is refused from that instant, by the daemon's clock.
 */
export function runtimeLeftMs(policy: Pick<Policy, "ceiling">, renewedAt: number, now: number): number | undefined {
  const limit = policy.ceiling?.runtimeMs;
  return limit === undefined ? undefined : renewedAt + limit - now;
}

export function runtimeRefusal(policy: Pick<Policy, "ceiling">, renewedAt: number, now: number): Refusal | undefined {
  const left = runtimeLeftMs(policy, renewedAt, now);
  if (left === undefined || left > 0) return undefined;
  return refuse(
    "envelope.runtime",
    `the team has run unattended for its whole runtime (${showDuration(policy.ceiling?.runtimeMs ?? 0)} since the owner last renewed it); it is paused until the owner renews it (teamd renew --team TEAM, or teamd apply)`,
  );
}
