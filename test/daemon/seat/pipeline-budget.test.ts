import { describe, expect, it } from "vitest";
import { createSeatPipeline } from "../../../daemon/seat/pipeline.js";
import { RefusalError } from "../../../src/rpc/index.js";

/**
 * A seat's refusal budget (issue 20, finding 4), on the pipeline alone: no ledger (every call
 * is refused `ledger.unavailable`, which counts like any refusal), a clock the test moves.
 */
function setup(burst: number, perMinute: number) {
  let now = 0;
  const halts: { seat: string; why: string }[] = [];
  const pipeline = createSeatPipeline({
    ledger: () => undefined,
    clock: () => now,
    refusalBudget: { burst, perMinute },
    onRefusalBudget: (identity, why) => halts.push({ seat: identity.seat, why }),
  });
  const seat = { team: "proj", seat: "w" };
  const refusal = async (identity = seat) => {
    const error = await pipeline.context(identity, "file.read").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RefusalError);
    return (error as RefusalError).rule;
  };
  return { pipeline, seat, halts, refusal, advance: (ms: number) => void (now += ms) };
}

describe("the refusal budget", () => {
  it("the refusal past the burst stops the seat, once; later calls are refused seat.refusal-budget", async () => {
    const { halts, refusal } = setup(3, 60);
    for (let i = 0; i < 3; i++) expect(await refusal()).toBe("ledger.unavailable");
    expect(halts).toEqual([]);
    expect(await refusal()).toBe("ledger.unavailable");
    expect(halts).toEqual([{ seat: "w", why: "halted: refusal budget (4 refusals this run; the budget is 3 at once, then 60 a minute)" }]);
    expect(await refusal()).toBe("seat.refusal-budget");
    expect(await refusal()).toBe("seat.refusal-budget");
    expect(halts).toHaveLength(1);
  });

  it("refills at its rate: one a second at 60 a minute", async () => {
    const { halts, refusal, advance } = setup(3, 60);
    for (let i = 0; i < 3; i++) await refusal();
    advance(1000);
    await refusal();
    expect(halts).toEqual([]);
    advance(999);
    await refusal();
    expect(halts).toHaveLength(1);
  });

  it("a sustained rate under the budget never stops the seat", async () => {
    const { halts, refusal, advance } = setup(3, 60);
    for (let i = 0; i < 200; i++) {
      await refusal();
      advance(1000);
    }
    expect(halts).toEqual([]);
  });

  it("is per seat, and a new run starts full", async () => {
    const { pipeline, seat, halts, refusal } = setup(1, 0);
    await refusal();
    await refusal();
    expect(halts).toHaveLength(1);
    expect(await refusal({ team: "proj", seat: "other" })).toBe("ledger.unavailable");
    expect(halts).toHaveLength(1);
    pipeline.openRun(seat);
    expect(await refusal()).toBe("ledger.unavailable");
    expect(halts).toHaveLength(1);
  });
});
