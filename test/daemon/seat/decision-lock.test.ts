import { describe, expect, it } from "vitest";
import { createDecisionLock } from "../../../daemon/seat/decision-lock.js";

/** Counts event-loop turns: one increment per check phase, for `turns` turns. */
function turnCounter(turns: number): { readonly now: () => number } {
  let turn = 0;
  const tick = () => {
    turn++;
    if (turn < turns) setImmediate(tick);
  };
  setImmediate(tick);
  return { now: () => turn };
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("the decision lock", () => {
  it("has one holder at a time, in arrival order", async () => {
    const lock = createDecisionLock(100);
    const order: string[] = [];
    const first = await lock();
    const second = lock().then((release) => {
      order.push("second");
      release();
    });
    const third = lock().then((release) => {
      order.push("third");
      release();
    });
    for (let i = 0; i < 3; i++) await nextTurn();
    expect(order).toEqual([]); // the first holder has not released
    order.push("first");
    first();
    await Promise.all([second, third]);
    expect(order).toEqual(["first", "second", "third"]);
  });

  it("lets at most perTurn holders through in one turn; the rest go in later turns, in order", async () => {
    const lock = createDecisionLock(3);
    const turns = turnCounter(20);
    const seen: { id: number; turn: number }[] = [];
    await Promise.all(
      Array.from({ length: 7 }, (_, id) =>
        lock().then((release) => {
          seen.push({ id, turn: turns.now() });
          release();
        }),
      ),
    );
    expect(seen.map((s) => s.id)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(seen.map((s) => s.turn)).toEqual([0, 0, 0, 1, 1, 1, 2]);
  });

  it("starts counting again in a new turn (a quiet lock never makes a holder wait)", async () => {
    const lock = createDecisionLock(2);
    for (let round = 0; round < 4; round++) {
      const turns = turnCounter(2);
      const at: number[] = [];
      for (let i = 0; i < 2; i++) {
        const release = await lock();
        at.push(turns.now());
        release();
      }
      expect(at).toEqual([0, 0]);
      await nextTurn();
      await nextTurn();
    }
  });

  it("refuses a pace that is not a positive integer", () => {
    expect(() => createDecisionLock(0)).toThrow(/positive integer/);
    expect(() => createDecisionLock(1.5)).toThrow(/positive integer/);
  });
});
