import { expect } from "vitest";
import { processesInNamespace, seatNamespace } from "../sandbox/fixture/real-seat.js";

/**
 * The pid namespace of each seat (its inode and its init) a `teamd start --json` answer names (the proof of what must
 * die), after checking that `count` seats started and that each namespace runs something (the
 * control for a later `expectNoneLeft`).
 */
export async function startedNamespaces(answer: Promise<unknown>, count: number): Promise<string[]> {
  const started = (await answer) as { started: Array<{ initPid: number }> };
  expect(started.started).toHaveLength(count);
  // Each named with its init (fixture/real-seat.ts seatNamespace): an inode alone is reused.
  const namespaces = await Promise.all(started.started.map((s) => seatNamespace(s.initPid)));
  for (const ns of namespaces) expect((await processesInNamespace(ns)).length).toBeGreaterThan(0); // control
  return namespaces;
}

/** No process is left in any of these pid namespaces. */
export async function expectNoneLeft(namespaces: readonly string[]): Promise<void> {
  for (const ns of namespaces) expect(await processesInNamespace(ns), ns).toEqual([]);
}
