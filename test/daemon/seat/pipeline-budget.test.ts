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

  it("is taken before a refusal's record is written: refusals made faster than records are written put the burst and one on record, no more", async () => {
    const halts: string[] = [];
    const appended: unknown[] = [];
    // A ledger whose appends take a while, as durable ones do: a flood of refusals all start before the first lands.
    const ledger = {
      state: { status: "ready" },
      append: async (draft: unknown) => {
        appended.push(draft);
        await new Promise((resolve) => setTimeout(resolve, 20));
        return { seq: appended.length };
      },
    };
    const pipeline = createSeatPipeline({
      ledger: () => ledger as never,
      clock: () => 0,
      refusalBudget: { burst: 3, perMinute: 60 },
      onRefusalBudget: (_identity, why) => void halts.push(why),
    });
    const seat = { team: "proj", seat: "w" };
    const flood = await Promise.all(
      Array.from({ length: 50 }, () => pipeline.refuseCall(seat, { decision: "refuse", rule: "rpc.frames", reason: "tiny frames" } as never, "rpc.WhoAmI")),
    );
    expect(flood.every((e) => e instanceof RefusalError && e.rule === "rpc.frames")).toBe(true);
    expect(appended).toHaveLength(4);
    expect(halts).toEqual(["halted: refusal budget (4 refusals this run; the budget is 3 at once, then 60 a minute)"]);
  });
});
