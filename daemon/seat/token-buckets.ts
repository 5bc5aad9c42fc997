/**
 * Per-seat token buckets on the daemon's clock (issue 20): `burst` tokens at once, refilled at
 * `perMinute`. The refusal budget counts refusals in one (daemon/seat/pipeline.ts); the act
 * budget counts record bytes in another. A bucket may go below zero — a cost is charged after
 * the work it pays for is known — and is then empty until it refills past zero.
 */
export interface Rate {
  readonly burst: number;
  readonly perMinute: number;
}

export interface TokenBuckets {
  /** Tokens left for `key` now (refilled; a fresh key is full). */
  level(key: string): number;
  /** Take `amount` (may leave the bucket below zero); returns what is left. */
  take(key: string, amount: number): number;
  /** Milliseconds until the bucket is above zero again (0 when it is; infinite when it never refills). */
  waitMs(key: string): number;
  /** What `key` took since its bucket was made (or reset). */
  taken(key: string): number;
  reset(key: string): void;
}

interface Bucket {
  tokens: number;
  at: number;
  taken: number;
}

export function createTokenBuckets(rate: Rate, clock: () => number): TokenBuckets {
  const buckets = new Map<string, Bucket>();
  function refilled(key: string): Bucket {
    const t = clock();
    const bucket = buckets.get(key) ?? { tokens: rate.burst, at: t, taken: 0 };
    buckets.set(key, bucket);
    bucket.tokens = Math.min(rate.burst, bucket.tokens + (Math.max(0, t - bucket.at) / 60_000) * rate.perMinute);
    bucket.at = t;
    return bucket;
  }
  return {
    level: (key) => refilled(key).tokens,
    take(key, amount) {
      const bucket = refilled(key);
      bucket.tokens -= amount;
      bucket.taken += amount;
      return bucket.tokens;
    },
    waitMs(key) {
      const { tokens } = refilled(key);
      if (tokens > 0) return 0;
      // Above zero, strictly: at exactly zero the bucket is still empty.
      return rate.perMinute <= 0 ? Number.POSITIVE_INFINITY : Math.floor((-tokens / rate.perMinute) * 60_000) + 1;
    },
    taken: (key) => buckets.get(key)?.taken ?? 0,
    reset: (key) => void buckets.delete(key),
  };
}
