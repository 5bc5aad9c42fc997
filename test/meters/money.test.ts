import { describe, expect, it } from "vitest";
import fc from "fast-check";
import {
  addDecimal,
  ceilShifted,
  currencyCode,
  decimalOfNumber,
  minorDigits,
  parseDecimal,
  readingAmount,
  ZERO,
  type Decimal,
} from "../../src/meters/money.js";
import { excerpt } from "../../src/meters/command.js";
import { MeterError } from "../../src/meters/index.js";

const value = (d: Decimal | undefined) => (d === undefined ? undefined : { digits: String(d.digits), scale: d.scale });

describe("meter amounts: exact decimals, one upward rounding of the window's total, integer minor units", () => {
  it("parses plain and exponent decimals exactly, and nothing else", () => {
    expect(value(parseDecimal("123.78912"))).toEqual({ digits: "12378912", scale: 5 });
    expect(value(parseDecimal("-0.5"))).toEqual({ digits: "-5", scale: 1 });
    expect(value(parseDecimal("1e-7"))).toEqual({ digits: "1", scale: 7 });
    expect(value(parseDecimal("1.5e+3"))).toEqual({ digits: "1500", scale: 0 });
    for (const bad of ["", " 1", "1 ", "1,5", "0x10", "NaN", "Infinity", "1.", ".5", "1e", "1e999", "--1", "١٢"])
      expect(parseDecimal(bad), bad).toBeUndefined();
  });

  it("takes a JSON number as the decimal it was written as: 0.1 is one tenth, not 0.1000000000000000055…", () => {
    expect(value(decimalOfNumber(0.1))).toEqual({ digits: "1", scale: 1 });
    expect(value(decimalOfNumber(1e-7))).toEqual({ digits: "1", scale: 7 });
    expect(decimalOfNumber(Number.NaN)).toBeUndefined();
    expect(decimalOfNumber(Number.POSITIVE_INFINITY)).toBeUndefined();
    const sum = addDecimal(decimalOfNumber(0.1) as Decimal, decimalOfNumber(0.2) as Decimal);
    expect(ceilShifted(sum, 2)).toBe(30n); // (0.1 + 0.2) * 100 in floats is 30.000000000000004
  });

  it("rounds up (toward +∞), once, on the total", () => {
    const d = (t: string) => parseDecimal(t) as Decimal;
    expect(ceilShifted(d("12.341"), 2)).toBe(1235n);
    expect(ceilShifted(d("12.34"), 2)).toBe(1234n);
    expect(ceilShifted(d("-0.5"), 0)).toBe(0n);
    expect(ceilShifted(d("-1.5"), 0)).toBe(-1n);
    expect(ceilShifted(d("7"), 3)).toBe(7000n);
    expect(readingAmount("m", d("3300.876"), 0)).toBe(3301);
    expect(() => readingAmount("m", d("-0.01"), 2)).toThrow(MeterError);
    expect(() => readingAmount("m", d("1e40"), 0)).toThrow(/beyond what teamd can count exactly/);
  });

  it("property: the rounded exact sum is the least integer at or above the true sum of any decimals", () => {
    const amount = fc.tuple(fc.bigInt({ min: 0n, max: 10n ** 12n }), fc.bigInt({ min: 0n, max: 10n ** 9n - 1n }), fc.integer({ min: 0, max: 9 }));
    fc.assert(
      fc.property(fc.array(amount, { maxLength: 40 }), fc.integer({ min: 0, max: 3 }), (parts, shift) => {
        // The reference: every amount in units of 10^-9 exactly (fraction digits cut to `keep`).
        let reference = 0n;
        let total = ZERO;
        for (const [whole, fraction, keep] of parts) {
          const digits = String(fraction).padStart(9, "0").slice(0, keep);
          reference += whole * 10n ** 9n + (keep === 0 ? 0n : BigInt(digits) * 10n ** BigInt(9 - keep));
          total = addDecimal(total, parseDecimal(keep === 0 ? String(whole) : `${whole}.${digits}`) as Decimal);
        }
        const scaled = reference * 10n ** BigInt(shift);
        const unit = 10n ** 9n;
        const expected = scaled / unit + (scaled % unit === 0n ? 0n : 1n);
        expect(ceilShifted(total, shift)).toBe(expected);
      }),
      { numRuns: 300 },
    );
  });

  it("knows currencies by their ISO 4217 codes and minor digits", () => {
    expect(currencyCode("usd")).toBe("USD");
    expect(currencyCode("EUR")).toBe("EUR");
    expect(currencyCode("XYZ")).toBeUndefined();
    expect(currencyCode("dollars")).toBeUndefined();
    expect(currencyCode(5)).toBeUndefined();
    expect([minorDigits("USD"), minorDigits("JPY"), minorDigits("KWD")]).toEqual([2, 0, 3]);
  });

  it("quotes a command's output only as a short excerpt with every non-printable character escaped", () => {
    expect(excerpt('a"b\\c\u001b[2J\u202e\n😀')).toBe('"a\\"b\\\\c\\u001b[2J\\u202e\\u000a\\u{1f600}"');
    expect(excerpt("x".repeat(100), 10)).toBe(`"${"x".repeat(10)}"…`);
  });
});
