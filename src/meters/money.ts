import { MeterError } from "./meter.js";

/**
 * Amounts of money as meters report them, summed exactly and turned into the integer minor units
 * the kernel counts in (src/kernel/envelope-spend.ts). No float ever adds two amounts: a decimal
 * text is parsed into a big integer and a power of ten, sums are exact, and the one rounding
 * happens at the end, on the window's total, upward (toward +∞) — a fraction of a cent the
 * provider reports is counted as a whole cent, never dropped, so a meter can over-count a
 * window by less than one minor unit and never under-count it (the fail-closed direction of §8).
 */

/** An exact decimal: `digits / 10^scale`. */
export interface Decimal {
  readonly digits: bigint;
  readonly scale: number;
}

export const ZERO: Decimal = Object.freeze({ digits: 0n, scale: 0 });

/** A plain decimal (`12.34`, `-0.5`, `123.78912`) or one with an exponent (`1e-7`, as a JSON number prints). */
const DECIMAL_TEXT = /^([+-]?)([0-9]{1,40})(?:\.([0-9]{1,40}))?(?:[eE]([+-]?[0-9]{1,3}))?$/;
const MAX_EXPONENT = 40;

/** The exact value of a decimal text; undefined when it is not one (or absurdly long). */
export function parseDecimal(text: string): Decimal | undefined {
  const m = DECIMAL_TEXT.exec(text);
  if (m === null) return undefined;
  const exponent = m[4] === undefined ? 0 : Number(m[4]);
  if (Math.abs(exponent) > MAX_EXPONENT) return undefined;
  const fraction = m[3] ?? "";
  let digits = BigInt(`${m[2] as string}${fraction}`);
  if (m[1] === "-") digits = -digits;
  let scale = fraction.length - exponent;
  if (scale < 0) {
    digits *= 10n ** BigInt(-scale);
    scale = 0;
  }
  return { digits, scale };
}

/**
 * The exact value of a JSON number, by its shortest round-trip decimal text (ECMAScript's
 * Number::toString): for any amount written with up to 15 significant digits — every price a
 * provider reports — that is the very text the provider wrote (`0.06` stays `0.06`, not
 * 0.059999999999999997779…).
 */
export function decimalOfNumber(value: number): Decimal | undefined {
  return Number.isFinite(value) ? parseDecimal(String(value)) : undefined;
}

export function addDecimal(a: Decimal, b: Decimal): Decimal {
  const scale = Math.max(a.scale, b.scale);
  return { digits: a.digits * 10n ** BigInt(scale - a.scale) + b.digits * 10n ** BigInt(scale - b.scale), scale };
}

/** `value × 10^shift`, rounded up (toward +∞) to an integer. */
export function ceilShifted(value: Decimal, shift: number): bigint {
  const scale = value.scale - shift;
  if (scale <= 0) return value.digits * 10n ** BigInt(-scale);
  const divisor = 10n ** BigInt(scale);
  const quotient = value.digits / divisor; // truncated toward zero: the ceiling already, for a negative value
  return value.digits % divisor > 0n ? quotient + 1n : quotient;
}

/**
 * A window's total as the reading's amount: `total × 10^shift` rounded up, which must be a whole
 * number ≥ 0 that a JavaScript number holds exactly. A negative total (credits beyond the
 * window's usage) is refused rather than counted as zero: the owner sees it, and until it is
 * resolved the source's usage counts as spent.
 */
export function readingAmount(meter: string, total: Decimal, shift: number): number {
  const minor = ceilShifted(total, shift);
  if (minor < 0n)
    throw new MeterError(`meter '${meter}': the window's total is negative; teamd counts only usage ≥ 0 (check the source's credits and refunds)`);
  if (minor > BigInt(Number.MAX_SAFE_INTEGER)) throw new MeterError(`meter '${meter}': the window's total is beyond what teamd can count exactly`);
  return Number(minor);
}

const CURRENCIES: ReadonlySet<string> = new Set(Intl.supportedValuesOf("currency"));

/** An ISO 4217 code, upper-cased (`usd` → `USD`); undefined when it is none. */
export function currencyCode(value: unknown): string | undefined {
  if (typeof value !== "string" || !/^[A-Za-z]{3}$/.test(value)) return undefined;
  const code = value.toUpperCase();
  return CURRENCIES.has(code) ? code : undefined;
}

/** How many digits a currency's minor unit has (USD 2, JPY 0, KWD 3), from ICU's ISO 4217 data. */
export function minorDigits(code: string): number {
  return new Intl.NumberFormat("en", { style: "currency", currency: code }).resolvedOptions().maximumFractionDigits ?? 2;
}
