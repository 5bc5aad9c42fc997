import { describe, expect, it } from "vitest";
import fc from "fast-check";
import {
  COOL_DOWN_FORGET_MS,
  COOL_DOWN_MAX_MS,
  COOL_DOWN_MS,
  CoolDown,
  OVERHEAD_BURST_BYTES,
  OVERHEAD_BYTES_PER_SECOND,
  OVERHEAD_STREAM_BYTES,
  OverheadMeter,
  type ConnectionTotals,
} from "../../src/rpc/overhead-meter.js";

/**
 * The arithmetic of a seat socket's overhead bound (src/rpc/overhead-meter.ts): named cases,
 * then properties — honest traffic, however it is shaped, never runs the bucket dry, and what the
 * bucket lets through is never more than its size plus its credits (a brute-force sum).
 */

/** One connection's totals and the socket's clock at a step. */
type Step = Partial<ConnectionTotals> & { readonly atMs?: number };

const ZERO: ConnectionTotals = { read: 0, written: 0, useful: 0, streams: 0, lost: 0 };
const KIB = 1024;
const MIB = 1024 * KIB;
const GIB = 1024 * MIB;

/** Feeds a fresh meter one connection's steps (running totals), returns the last reading. */
function run(steps: readonly Step[]) {
  const meter = new OverheadMeter(0);
  const connection = {};
  let reading = { tokens: OVERHEAD_BURST_BYTES, overhead: 0 };
  for (const { atMs, ...totals } of steps) reading = meter.observe(connection, { ...ZERO, ...totals }, atMs ?? 0);
  return reading;
}

describe("a seat socket's overhead meter", () => {
  it.each<[string, Step[], "dry" | "not dry"]>([
    ["nothing sent", [{ atMs: 100 }], "not dry"],
    ["the bucket's size of overhead at once: not past it", [{ read: OVERHEAD_BURST_BYTES }], "not dry"],
    ["one byte past the bucket's size at once", [{ read: OVERHEAD_BURST_BYTES + 1 }], "dry"],
    [
      "64 MiB of a call's data, 9 bytes a 16 KiB frame besides",
      [{ read: 64 * MIB + ((64 * MIB) / (16 * KIB)) * 9, useful: 64 * MIB, streams: 1, atMs: 500 }],
      "not dry",
    ],
    ["2 MiB of frames HTTP/2 ignores, in a second", [{ read: 2 * MIB, atMs: 1000 }], "dry"],
    ["2 MiB of overhead over two minutes, in pieces", Array.from({ length: 120 }, (_, i) => ({ read: (i + 1) * 17_000, atMs: (i + 1) * 1000 })), "not dry"],
    [
      "a flood at twice the per-second credit, for two minutes",
      Array.from({ length: 120 }, (_, i) => ({ read: (i + 1) * 2 * OVERHEAD_BYTES_PER_SECOND, atMs: (i + 1) * 1000 })),
      "dry",
    ],
    [
      "10,000 calls of 500 bytes of headers each, 2 KiB of data each",
      [{ read: 10_000 * (500 + 2 * KIB + 9), useful: 10_000 * 2 * KIB, streams: 10_000, atMs: 10_000 }],
      "not dry",
    ],
    [
      "a read of 1 GiB for which the client gave back 13 bytes a 16 KiB",
      [{ read: (GIB / (16 * KIB)) * 13, written: GIB, streams: 1, atMs: 10_000 }],
      "not dry",
    ],
    // Credit is never banked past the bucket's size: an idle hour, then a flood.
    ["an idle hour, then 2 MiB at once", [{ atMs: 3_600_000 }, { read: 2 * MIB, atMs: 3_600_100 }], "dry"],
    // Data for answered calls is not counted as useful by the server: it is all overhead here.
    ["streams opened to buy credit: 1,000 streams, each 4 KiB of overhead", [{ read: 1000 * 4 * KIB, streams: 1000, atMs: 100 }], "dry"],
  ])("%s", (_name, steps, expected) => {
    expect(run(steps).tokens < 0 ? "dry" : "not dry").toBe(expected);
  });

  it("is the socket's, not each connection's: connections each sending most of a bucket and closing run the one bucket dry", () => {
    const meter = new OverheadMeter(0);
    // 0.6 MiB of frames HTTP/2 ignores each, closed within 10 ms, read once when they close (found by an attack: each had a full bucket of its own).
    const readings = Array.from({ length: 3 }, (_, i) => meter.observe({}, { ...ZERO, read: 0.6 * MIB }, (i + 1) * 10));
    expect(readings.map((r) => r.tokens < 0)).toEqual([false, true, true]);
    // Each reading tells its own connection's overhead.
    expect(readings.map((r) => r.overhead)).toEqual([0.6 * MIB, 0.6 * MIB, 0.6 * MIB]);
  });

  it("the time credit is the socket's: eight connections read in the same second earn what one does", () => {
    const meter = new OverheadMeter(0);
    meter.observe({}, { ...ZERO, read: OVERHEAD_BURST_BYTES }, 0);
    // One second later, each of eight connections reads 4 KiB of overhead: 32 KiB against 16 KiB earned.
    const last = Array.from({ length: 8 }, () => meter.observe({}, { ...ZERO, read: 4 * KIB }, 1000)).pop();
    expect(last?.tokens).toBeCloseTo(OVERHEAD_BYTES_PER_SECOND - 8 * 4 * KIB);
  });

  it("forgives an overdraft after a cut: the bucket is full again (the cool-down answers for the debt)", () => {
    const meter = new OverheadMeter(0);
    expect(meter.observe({}, { ...ZERO, read: 5 * MIB }, 0).tokens).toBeLessThan(0);
    meter.forgive();
    expect(meter.observe({}, { ...ZERO, read: 100 }, 1000).tokens).toBe(OVERHEAD_BURST_BYTES);
    expect(meter.observe({}, { ...ZERO, read: OVERHEAD_BURST_BYTES + OVERHEAD_BYTES_PER_SECOND + 1 }, 2000).tokens).toBeLessThan(0);
  });

  it("counts bytes a stream sent for a message it never finished as overhead, though they were counted as a call's data when they came", () => {
    // 200 KiB of data credited, then found lost when its stream ended: 200 KiB of overhead.
    expect(
      run([
        { read: 200 * KIB, useful: 200 * KIB },
        { read: 200 * KIB, useful: 200 * KIB, lost: 200 * KIB },
      ]).overhead,
    ).toBe(200 * KIB);
    // Six such streams at once run the bucket dry; whole messages do not.
    expect(run([{ read: 6 * 200 * KIB, useful: 6 * 200 * KIB, streams: 6, lost: 6 * 200 * KIB }]).tokens).toBeLessThan(0);
    expect(run([{ read: 6 * 200 * KIB, useful: 6 * 200 * KIB, streams: 6 }]).tokens).toBe(OVERHEAD_BURST_BYTES);
  });

  it("counts what reached no call as overhead, and what did as not", () => {
    expect(run([{ read: 5000, useful: 3000 }]).overhead).toBe(2000);
    expect(
      run([
        { read: 5000, useful: 3000 },
        { read: 9000, useful: 3000 },
      ]).overhead,
    ).toBe(6000);
  });

  it("property: honest traffic — calls whose DATA frames average 1 KiB or more, a few hundred bytes of headers each, WINDOW_UPDATEs for what the daemon wrote, a ping a second — never runs the bucket dry", () => {
    const call = fc.record({
      headers: fc.integer({ min: 20, max: 600 }),
      data: fc.integer({ min: 0, max: 4 * MIB }),
      frame: fc.integer({ min: 1024, max: 16 * KIB }),
      reply: fc.integer({ min: 0, max: 8 * MIB }),
      gapMs: fc.integer({ min: 0, max: 2000 }),
    });
    fc.assert(
      fc.property(fc.array(call, { maxLength: 200 }), (calls) => {
        const meter = new OverheadMeter(0);
        const connection = {};
        let now = { ...ZERO };
        let atMs = 0;
        for (const c of calls) {
          const frames = Math.ceil(c.data / c.frame) + 1;
          const windowUpdates = Math.ceil(c.reply / (32 * KIB)) * 2 * 13;
          const pings = Math.ceil(c.gapMs / 1000) * 17;
          now = {
            read: now.read + c.headers + frames * 9 + c.data + windowUpdates + pings + 13,
            written: now.written + c.reply,
            useful: now.useful + c.data,
            streams: now.streams + 1,
            lost: 0,
          };
          atMs += c.gapMs;
          if (meter.observe(connection, now, atMs).tokens < 0) return false;
        }
        return true;
      }),
    );
  });

  it("property: what the meter lets through before it runs dry, from three connections read in any order, is at most its size plus every credit it was given (a brute-force sum)", () => {
    const step = fc.record({
      overhead: fc.integer({ min: 0, max: 256 * KIB }),
      useful: fc.integer({ min: 0, max: 256 * KIB }),
      written: fc.integer({ min: 0, max: 256 * KIB }),
      streams: fc.integer({ min: 0, max: 4 }),
      ms: fc.integer({ min: 0, max: 500 }),
      connection: fc.integer({ min: 0, max: 2 }),
      // Data counted as a call's that made no message (a stream that ended mid-message): overhead after all.
      lost: fc.integer({ min: 0, max: 64 * KIB }),
    });
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 100 }), (steps) => {
        const meter = new OverheadMeter(0);
        const connections = [{}, {}, {}];
        const totals: ConnectionTotals[] = connections.map(() => ({ ...ZERO }));
        const each = connections.map(() => 0);
        let atMs = 0;
        let overhead = 0;
        let credits = 0;
        for (const s of steps) {
          const t = totals[s.connection] as ConnectionTotals;
          const now = {
            read: t.read + s.overhead + s.useful,
            written: t.written + s.written,
            useful: t.useful + s.useful,
            streams: t.streams + s.streams,
            lost: t.lost + s.lost,
          };
          totals[s.connection] = now;
          atMs += s.ms;
          overhead += s.overhead + s.lost;
          each[s.connection] = (each[s.connection] as number) + s.overhead + s.lost;
          credits += s.streams * OVERHEAD_STREAM_BYTES + s.useful / 16 + s.written / 64 + (s.ms / 1000) * OVERHEAD_BYTES_PER_SECOND;
          const reading = meter.observe(connections[s.connection] as object, now, atMs);
          if (reading.overhead !== each[s.connection]) return false;
          if (reading.tokens >= 0 && overhead > OVERHEAD_BURST_BYTES + credits + 1e-6) return false;
          if (reading.tokens < 0) return true;
        }
        return true;
      }),
    );
  });
});

describe("a seat socket's cool-down", () => {
  it.each<[string, number[], number, boolean]>([
    ["never struck: open", [], 0, true],
    ["struck once: closed for the first cool-down", [1000], 1000 + COOL_DOWN_MS - 1, false],
    ["struck once: open once it ends", [1000], 1000 + COOL_DOWN_MS, true],
    ["struck again just after: twice as long from then", [1000, 1000 + COOL_DOWN_MS + 10], 1000 + COOL_DOWN_MS + 10 + 2 * COOL_DOWN_MS - 1, false],
    ["struck three times: four times as long", [0, 2000, 6000], 6000 + 4 * COOL_DOWN_MS - 1, false],
    ["struck 40 times in a row: never past the longest", Array.from({ length: 40 }, (_, i) => i), 39 + COOL_DOWN_MAX_MS, true],
    ["struck 40 times in a row: closed just before the longest ends", Array.from({ length: 40 }, (_, i) => i), 39 + COOL_DOWN_MAX_MS - 1, false],
    // A quiet spell past the last cool-down's end: back to the first.
    [
      "struck, then again after a quiet spell: the first cool-down again",
      [0, 2000, COOL_DOWN_MS * 3 + COOL_DOWN_FORGET_MS + 1],
      COOL_DOWN_MS * 3 + COOL_DOWN_FORGET_MS + 1 + COOL_DOWN_MS,
      true,
    ],
    // A long cool-down does not forget itself: struck as it ends, it doubles.
    [
      "struck at the end of the longest: the longest again",
      [...Array.from({ length: 10 }, (_, i) => i), 9 + COOL_DOWN_MAX_MS],
      9 + 2 * COOL_DOWN_MAX_MS - 1,
      false,
    ],
  ])("%s", (_name, strikes, at, open) => {
    const coolDown = new CoolDown();
    for (const t of strikes) coolDown.strike(t);
    expect(coolDown.open(at)).toBe(open);
  });
});
