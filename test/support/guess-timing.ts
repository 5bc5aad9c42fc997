import { type TeamdHarness } from "./teamd-harness.js";

/** A sample of times as a line: median, min, max, count, then every value (reported, never asserted). */
export function spread(xs: readonly number[]): string {
  const s = [...xs].sort((a, b) => a - b);
  return `median ${s[Math.floor(s.length / 2)]} ms, min ${s[0]}, max ${s[s.length - 1]} (n=${s.length}) [${xs.join(", ")}]`;
}

/**
 * Time a right and a wrong guess's push, alternating (right first, then wrong first, …), each
 * timed by the seat's own clock around `push(ref)`. The seat has the two packs ready as
 * /tmp/evil/pack-right and /tmp/evil/pack-wrong, and its git answers pack-objects with
 * /tmp/evil/pack-cur. At most `rounds` rounds, none begun past `budgetMs`.
 */
export async function timeGuesses(
  h: TeamdHarness,
  options: {
    readonly seat: string;
    readonly prefix: string;
    readonly rounds: number;
    readonly budgetMs: number;
    readonly push: (ref: string) => string;
    readonly words: (text: string, branch: string) => string;
  },
): Promise<{ times: Record<"right" | "wrong", number[]>; said: Set<string> }> {
  const times: Record<"right" | "wrong", number[]> = { right: [], wrong: [] };
  const said = new Set<string>();
  const until = Date.now() + options.budgetMs;
  for (let i = 0; i < options.rounds && Date.now() < until; i++) {
    const order: readonly ("right" | "wrong")[] = i % 2 === 0 ? ["right", "wrong"] : ["wrong", "right"];
    for (const which of order) {
      const ref = `${options.prefix}-${which}`;
      const r = await h.sh(
        options.seat,
        `cp /tmp/evil/pack-${which} /tmp/evil/pack-cur && s=$(date +%s%N) && out=$(${options.push(ref)}) ; e=$(date +%s%N); echo "$out"; echo "ms $(( (e - s) / 1000000 ))"`,
      );
      times[which].push(Number(/^ms (\d+)$/m.exec(r.stdout)?.[1]));
      said.add(`${which}: ${options.words(r.stdout.replace(/^ms \d+$/m, ""), ref)}`);
    }
  }
  return { times, said };
}
