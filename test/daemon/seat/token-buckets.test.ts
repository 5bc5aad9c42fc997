import { describe, expect, it } from "vitest";
import { createTokenBuckets } from "../../../daemon/seat/token-buckets.js";

/** The per-seat buckets behind the refusal and act budgets, on a clock the test moves. */
function setup(burst: number, perMinute: number) {
  let now = 1_000;
  const b = createTokenBuckets({ burst, perMinute }, () => now);
  return { b, advance: (ms: number) => void (now += ms) };
}

describe("token buckets", () => {
  it("a fresh key is full; a take may go below zero and says what is left", () => {
    const { b } = setup(100, 60);
    expect(b.level("a")).toBe(100);
    expect(b.take("a", 70)).toBe(30);
    expect(b.take("a", 50)).toBe(-20);
    expect(b.taken("a")).toBe(120);
    expect(b.level("b")).toBe(100);
  });

  it("refills at its rate, never past its burst", () => {
    const { b, advance } = setup(100, 60);
    b.take("a", 100);
    advance(30_000);
    expect(b.level("a")).toBeCloseTo(30);
    advance(10 * 60_000);
    expect(b.level("a")).toBe(100);
  });

  it("waitMs: how long until the bucket is above zero again", () => {
    const { b, advance } = setup(100, 60);
    expect(b.waitMs("a")).toBe(0);
    b.take("a", 130);
    // At exactly zero it is still empty: the wait is to the first millisecond past it.
    expect(b.waitMs("a")).toBe(30_001);
    advance(30_000);
    expect(b.waitMs("a")).toBe(1);
    advance(1);
    expect(b.waitMs("a")).toBe(0);
  });

  it("an empty bucket that never refills waits for ever; a reset starts it full", () => {
    const { b } = setup(10, 0);
    b.take("a", 10);
    expect(b.waitMs("a")).toBe(Number.POSITIVE_INFINITY);
    b.reset("a");
    expect(b.level("a")).toBe(10);
    expect(b.taken("a")).toBe(0);
  });
});
