/** The team file's durations (`90s`, `30m`, `8h`, `7d`): read and written, one way everywhere. */
const UNIT_MS: Readonly<Record<string, number>> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90s`, `30m`, `8h`, `7d` → milliseconds; undefined when not a duration. */
export function parseDuration(text: string): number | undefined {
  const m = /^([1-9][0-9]{0,6})(s|m|h|d)$/.exec(text);
  if (m === null) return undefined;
  return Number(m[1]) * (UNIT_MS[m[2] as string] as number);
}

/** A duration in its canonical written form: the largest unit that divides it exactly. */
export function showDuration(ms: number): string {
  for (const unit of ["d", "h", "m", "s"]) {
    const size = UNIT_MS[unit] as number;
    if (ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${Math.ceil(ms / 1000)}s`;
}
