import { authorize } from "../../src/kernel/authorize.js";
import type { KernelRequest } from "../../src/kernel/request.js";
import type { KernelView } from "../../src/kernel/view.js";

/**
 * `authorize` timed one call at a time over a cycle of requests, after a warm-up: the sorted
 * per-call microseconds and how many were allowed. Shared by the kernel and leases benches so
 * both measure the same way.
 */
export function timeAuthorize(
  view: KernelView,
  requests: readonly KernelRequest[],
  now: number,
  warmup: number,
  calls: number,
): { sorted: number[]; allowed: number } {
  let allowed = 0;
  for (let i = 0; i < warmup; i++) authorize(view, requests[i % requests.length] as KernelRequest, now);
  const samples = new Float64Array(calls);
  for (let i = 0; i < calls; i++) {
    const request = requests[i % requests.length] as KernelRequest;
    const start = process.hrtime.bigint();
    const decision = authorize(view, request, now);
    samples[i] = Number(process.hrtime.bigint() - start) / 1000;
    if (decision.decision === "allow") allowed++;
  }
  return { sorted: Array.from(samples).sort((a, b) => a - b), allowed };
}
