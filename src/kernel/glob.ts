/**
 * `*`-globs over branch names (§6), decided exactly. A glob here has one metacharacter, `*`,
 * which matches any run of characters, `/` included (as in a git refspec), so `seat/*` covers
 * `seat/alice/fix`. With `*` alone, every question §6 asks is decidable by automata: a glob is
 * a linear automaton with a self-loop wherever a `*` stands, inclusion is a search for a
 * counterexample over the product of automata, and the intersection of two globs is exactly
 * the finite union of globs read off the product's paths. Each search runs under a state
 * budget; a search that exhausts it answers "undecidable", and the caller refuses (§6: a pair
 * that cannot be decided is refused, never treated as universal).
 */

/** Three-valued answer: a search that could not finish is neither yes nor no. */
export type Tri = true | false | "undecidable";

/** States a single inclusion search may visit before it gives up. */
export const GLOB_BUDGET = 4096;
/** Globs an intersection may produce before it gives up. */
const INTERSECTION_LIMIT = 256;

interface Automaton {
  /** The literal characters in order; state i consumes lits[i] to reach i + 1. */
  readonly lits: readonly string[];
  /** loops[i]: state i has a self-loop on every character (a `*` stands there). */
  readonly loops: readonly boolean[];
}

function compile(pattern: string): Automaton {
  const lits: string[] = [];
  const loops: boolean[] = [false];
  for (const ch of pattern) {
    if (ch === "*") loops[loops.length - 1] = true;
    else {
      lits.push(ch);
      loops.push(false);
    }
  }
  return { lits, loops };
}

/**
 * Whether a glob matches a name: greedy wildcard matching with backtracking to the last `*`,
 * over UTF-16 code units and without allocating. Branch names and patterns are well-formed
 * UTF-16 (normalizeBranch refuses a lone surrogate), so a literal code point always matches
 * whole and the result equals matching over code points, as the automata below do.
 */
export function globMatch(pattern: string, name: string): boolean {
  const p = pattern.length;
  const s = name.length;
  let i = 0;
  let j = 0;
  let star = -1;
  let mark = 0;
  while (j < s) {
    const c = i < p ? pattern.charCodeAt(i) : -1;
    if (c === 42 /* * */) {
      star = i++;
      mark = j;
    } else if (c !== -1 && c === name.charCodeAt(j)) {
      i++;
      j++;
    } else if (star >= 0) {
      i = star + 1;
      j = ++mark;
    } else return false;
  }
  while (i < p && pattern.charCodeAt(i) === 42) i++;
  return i === p;
}

/** A character no glob names: it stands for every character outside the patterns' alphabet. */
const OTHER = "";

function step(a: Automaton, states: readonly number[], ch: string): number[] {
  const next: number[] = [];
  const push = (s: number): void => {
    if (!next.includes(s)) next.push(s);
  };
  for (const s of states) {
    if (a.loops[s] === true) push(s);
    if (s < a.lits.length && a.lits[s] === ch && ch !== OTHER) push(s + 1);
  }
  return next.sort((x, y) => x - y);
}

function accepts(a: Automaton, states: readonly number[]): boolean {
  return states.includes(a.lits.length);
}

/**
 * Whether every name matched by some glob of `left` and (when `restrict` is given) by some
 * glob of `restrict` is matched by some glob of `right`:  (∪left ∩ ∪restrict) ⊆ ∪right.
 * `restrict` is how a branch set is evaluated against the declared branch set (§6).
 */
export function globsIncluded(left: readonly string[], restrict: readonly string[] | undefined, right: readonly string[], budget: number = GLOB_BUDGET): Tri {
  const rights = right.map(compile);
  let undecided = false;
  for (const l of left) {
    for (const d of restrict ?? [undefined]) {
      const answer = pairIncluded(compile(l), d === undefined ? undefined : compile(d), rights, budget);
      if (answer === false) return false;
      if (answer === "undecidable") undecided = true;
    }
  }
  return undecided ? "undecidable" : true;
}

function pairIncluded(l: Automaton, d: Automaton | undefined, rights: readonly Automaton[], budget: number): Tri {
  const alphabet = new Set<string>([OTHER, ...l.lits, ...(d?.lits ?? [])]);
  for (const r of rights) for (const ch of r.lits) alphabet.add(ch);
  interface State {
    readonly l: readonly number[];
    readonly d: readonly number[];
    readonly r: readonly (readonly number[])[];
  }
  const key = (s: State): string => `${s.l.join(",")}|${s.d.join(",")}|${s.r.map((x) => x.join(",")).join(";")}`;
  const start: State = { l: [0], d: [0], r: rights.map(() => [0]) };
  const seen = new Set<string>([key(start)]);
  const queue: State[] = [start];
  for (let head = 0; head < queue.length; head++) {
    const s = queue[head] as State;
    const inLeft = accepts(l, s.l) && (d === undefined || accepts(d, s.d));
    if (inLeft && !rights.some((r, k) => accepts(r, s.r[k] ?? []))) return false;
    for (const ch of alphabet) {
      const nl = step(l, s.l, ch);
      if (nl.length === 0) continue;
      const nd = d === undefined ? s.d : step(d, s.d, ch);
      if (nd.length === 0) continue;
      const next: State = { l: nl, d: nd, r: rights.map((r, k) => step(r, s.r[k] ?? [], ch)) };
      const k = key(next);
      if (seen.has(k)) continue;
      if (seen.size >= budget) return "undecidable";
      seen.add(k);
      queue.push(next);
    }
  }
  return true;
}

/** Whether some name matches both `pattern` and one of `restrict`. */
export function globIntersects(pattern: string, restrict: readonly string[], budget: number = GLOB_BUDGET): Tri {
  const empty = globsIncluded([pattern], restrict, [], budget);
  return empty === "undecidable" ? "undecidable" : !empty;
}

/**
 * The exact intersection of two globs as a union of globs: every path through the product
 * automaton from start to accept spells one glob, with a `*` wherever both sides loop.
 */
export function globIntersection(a: string, b: string): readonly string[] | "undecidable" {
  const x = compile(a);
  const y = compile(b);
  const out = new Set<string>();
  let steps = 0;
  let exhausted = false;
  const walk = (i: number, j: number, prefix: string): void => {
    if (exhausted) return;
    if (++steps > GLOB_BUDGET || out.size > INTERSECTION_LIMIT) {
      exhausted = true;
      return;
    }
    const here = prefix + (x.loops[i] === true && y.loops[j] === true ? "*" : "");
    if (i === x.lits.length && j === y.lits.length) out.add(here);
    const xi = x.lits[i];
    const yj = y.lits[j];
    if (xi !== undefined && yj !== undefined && xi === yj) walk(i + 1, j + 1, here + xi);
    if (x.loops[i] === true && yj !== undefined) walk(i, j + 1, here + yj);
    if (y.loops[j] === true && xi !== undefined) walk(i + 1, j, here + xi);
  };
  walk(0, 0, "");
  if (exhausted) return "undecidable";
  return simplifyGlobs([...out]);
}

/**
 * Drop duplicates and any glob another glob of the set already covers. Purely a matter of
 * size: the union matches the same names either way, so an undecided check keeps the glob.
 */
export function simplifyGlobs(globs: readonly string[]): readonly string[] {
  const unique = [...new Set(globs)].sort();
  return unique.filter(
    (g) => !unique.some((h) => h !== g && globsIncluded([g], undefined, [h]) === true && !(globsIncluded([h], undefined, [g]) === true && h > g)),
  );
}
