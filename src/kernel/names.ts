/**
 * Team, seat and role names become parts of paths, record fields and authority ids, so they
 * keep to an alphabet that cannot traverse, hide or collide: lower-case letters, digits and
 * inner dashes, starting with a letter, at most 32 characters (the daemon's rule for teams
 * and seats, daemon/host/names.ts, restated here because the kernel imports nothing outside it).
 */
const NAME = /^[a-z](?:[a-z0-9-]{0,30}[a-z0-9])?$/;

export function isName(value: string): boolean {
  return NAME.test(value);
}

export const NAME_RULE = "1-32 lower-case letters, digits and inner dashes, starting with a letter";

/** The closest of some candidates to a misspelt word, for a "did you mean" fix. */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const d = distance(word.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best !== undefined && bestDistance <= Math.max(2, Math.floor(word.length / 3)) ? best : undefined;
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const current = row[j] as number;
      row[j] = Math.min((row[j] as number) + 1, (row[j - 1] as number) + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = current;
    }
  }
  return row[b.length] as number;
}
