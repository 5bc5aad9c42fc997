import { spawn, type ChildProcessByStdio } from "node:child_process";
import { statSync } from "node:fs";
import type { Readable, Writable } from "node:stream";
import { connect, type Socket } from "node:net";
import { ShimService } from "../src/gen/teamd/v1/shim_pb.js";
import { SEAT_CHUNK_BYTES } from "../src/rpc/channel-options.js";
import { createRpcClient, sentCalls } from "../src/rpc/client.js";
import { RefusalError } from "../src/rpc/errors.js";
import { randomUUID } from "./request-id.js";
import { pushCalls } from "./first-calls.js";
import { guessPush, heldAfter, localCommit, OBJECT_ID, recordPushed } from "./push-guess.js";
import { revisions, startPacker, stopChild, type Packer } from "./push-pack.js";

/**
 * `git-remote-teamd`: git's remote helper for a `teamd::` remote (gitremote-helpers(7)), so
 * `git fetch teamd` and `git push teamd <branch>` work natively inside a seat. It speaks
 * the helper protocol on stdin/stdout with git, and the seat socket with the daemon:
 *
 * - list: the refs the daemon says this seat may read;
 * - fetch: one pack of the wanted tips minus what this repository has, indexed here;
 * - push: one pack of every commit the daemon has not listed, sent with the ref updates;
 *   the daemon's answer per ref becomes git's `ok` or `error`, so a refusal reads like
 *   git's own: `! [remote rejected] fix (teamd: scope.path: ...)`.
 *
 * It holds no policy: every decision is the daemon's.
 */
/** A pack travels in chunks under the seat socket's receive cap (src/rpc/channel-options.ts). */
const CHUNK = SEAT_CHUNK_BYTES;

/** 4,096 object names of 40 hex digits are about 170 KiB of a FetchRequest, under the 256 KiB cap with room for the wants. */
const MAX_HAVES = 4096;

interface Listed {
  readonly oid: string;
  readonly name: string;
}

/**
 * `early`: the daemon's socket, connected while this code loaded; `remote`: git's name for the
 * remote (its tracking refs are a push's guess); `earlyPack`: a push's pack on its guess, started
 * as the helper started (push-pack.ts), for the listing for a push to take; `sent`: what the
 * front wrote on `early` for such a push before this code loaded (first-calls.ts), its listing's
 * and whoAmI's calls.
 */
export async function runGitRemote(socket: string, early?: Socket, remote?: string, earlyPack?: Packer, sent?: Buffer): Promise<void> {
  const client = helperClient(socket, early, sent);
  // Connected while git sends its first commands (on the socket main.ts connected while this
  // code loaded): the listing's call then goes out at once (issue 26).
  client.connect();
  const out = (line: string) => process.stdout.write(`${line}\n`);
  const next = commandLines(process.stdin);
  let listed: Listed[] = [];
  let verbose = 1;
  /** This repository's refs, the fetch's haves: asked of git while the daemon answers the listing that comes before a fetch. */
  let haves: Promise<string[]> | undefined;
  /** The push's two git processes, started while the daemon answers the listing that comes before a push. */
  let ahead: PushAhead | undefined;
  /** Whether they are still to start: not once the push has begun, or the helper ends. */
  let wantAhead = false;
  /** Which seat this is, asked beside the listing for a push: the push names its refs by it. */
  let whoAmI: Promise<{ seat: string }> | undefined;
  let unclaimed = earlyPack;
  // A push known as the helper starts (its pack was started on the push's guess): its listing and
  // whoAmI asked now, while git and this helper trade capabilities and options, not once git
  // lists (issue 26: ~4 ms of every push, and the daemon's receive for it starts that much sooner).
  let pushListing = earlyPack !== undefined ? client.listRefs({ forPush: true }) : undefined;
  pushListing?.catch(() => undefined);
  if (earlyPack !== undefined) {
    whoAmI = client.whoAmI();
    whoAmI.catch(() => undefined);
  }
  try {
    for (let line = await next(); line !== undefined && line !== ""; line = await next()) {
      const [command = "", ...rest] = line.split(" ");
      if (command === "capabilities") {
        out("fetch");
        out("push");
        out("option");
        out("");
      } else if (command === "option") {
        if (rest[0] === "verbosity") {
          verbose = Number(rest[1] ?? "1");
          out("ok");
        } else if (rest[0] === "progress") out("ok");
        else out("unsupported");
      } else if (command === "list") {
        const forPush = rest[0] === "for-push";
        // A push's pack on its guess comes first: it is the longest wait of the push, longer
        // than the listing's round trip and what follows it (issue 26).
        const claimed = unclaimed;
        unclaimed = undefined;
        if (!forPush) claimed?.stop();
        const guess = forPush && claimed === undefined ? guessPush(process.env.GIT_DIR, remote) : undefined;
        const guessed = forPush ? (claimed ?? (guess !== undefined ? startPacker(guess) : undefined)) : undefined;
        // The call next, then git's process for the haves: starting a process holds this one
        // for a few milliseconds (issue 26), and the daemon answers meanwhile.
        const listing = (forPush ? pushListing : undefined) ?? client.listRefs({ forPush });
        pushListing = undefined;
        listing.catch(() => undefined);
        if (!forPush) {
          haves = localRefTips();
          haves.catch(() => undefined);
        } else {
          // Beside the listing, not after git's push command: the daemon answers it while it
          // records the listing (issue 26: it waited ~5 ms behind the push's cat-file before).
          whoAmI ??= client.whoAmI();
          whoAmI.catch(() => undefined);
          // After the call is on the wire: a spawn holds this thread for a few milliseconds.
          wantAhead = true;
          setImmediate(() => {
            if (wantAhead) ahead ??= startPushAhead(guessed);
            else guessed?.stop();
          });
        }
        const reply = await listing;
        listed = reply.refs.map((r) => ({ oid: r.oid, name: r.name }));
        for (const r of listed) out(`${r.oid} ${r.name}`);
        if (reply.head && listed.some((r) => r.name === reply.head)) out(`@${reply.head} HEAD`);
        out("");
      } else if (command === "fetch") {
        const wants = [rest[0] ?? ""];
        for (let more = await next(); more !== undefined && more !== ""; more = await next()) {
          const [, oid = ""] = more.split(" ");
          wants.push(oid);
        }
        await fetchPack(client, [...new Set(wants)], await (haves ?? localRefTips()), verbose);
        out("");
      } else if (command === "push") {
        const specs = [rest.join(" ")];
        for (let more = await next(); more !== undefined && more !== ""; more = await next()) specs.push(more.slice("push ".length));
        const started = ahead;
        ahead = undefined;
        wantAhead = false;
        for (const result of await push(client, specs, listed, verbose, started, whoAmI)) out(result);
        out("");
      } else {
        throw new Error(`git-remote-teamd: unknown command '${command}' from git`);
      }
    }
  } finally {
    wantAhead = false;
    ahead?.stop();
    unclaimed?.stop();
    client.close();
  }
}

type Client = ReturnType<typeof createRpcClient<typeof ShimService>>;

/**
 * git's commands, a line at a time (lines end in LF, gitremote-helpers(7)); undefined once git
 * closed its end. Not node's readline: its interface and its six modules were ~2 ms of every
 * push's and fetch's start in a seat, before git's first command was read (issue 26).
 */
export function commandLines(input: NodeJS.ReadableStream): () => Promise<string | undefined> {
  let text = "";
  let ended = false;
  let wake: (() => void) | undefined;
  input.setEncoding("utf8");
  input.on("data", (chunk: string) => {
    text += chunk;
    wake?.();
  });
  const end = () => {
    ended = true;
    wake?.();
  };
  input.on("end", end);
  input.on("error", end);
  return async () => {
    for (;;) {
      const at = text.indexOf("\n");
      if (at >= 0) {
        const line = text.slice(0, at);
        text = text.slice(at + 1);
        return line.endsWith("\r") ? line.slice(0, -1) : line;
      }
      if (ended) {
        const rest = text;
        text = "";
        return rest === "" ? undefined : rest;
      }
      await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
    }
  };
}

function say(verbose: number, text: string): void {
  if (verbose > 0) process.stderr.write(`teamd: ${text}\n`);
}

async function localRefTips(): Promise<string[]> {
  return (await gitText(["for-each-ref", "--format=%(objectname)", "refs/"])).split("\n").filter((l) => l !== "");
}

async function fetchPack(client: Client, wants: string[], haves: readonly string[], verbose: number): Promise<void> {
  // The call first, then index-pack: the daemon makes the pack while this process starts git (issue 26).
  // Haves only make the pack smaller; at most MAX_HAVES keep the request under the seat socket's receive cap.
  const replies = client.fetch({ wants, haves: [...new Set(haves)].slice(0, MAX_HAVES) })[Symbol.asyncIterator]();
  const head = replies.next();
  head.catch(() => undefined);
  let child;
  try {
    child = spawn("git", ["index-pack", "--stdin", "--fix-thin"], { stdio: ["pipe", "ignore", "inherit"] });
  } catch (error) {
    await replies.return?.(undefined);
    throw error;
  }
  // index-pack may die on a bad pack before it read it all (EPIPE): its exit code is the answer.
  child.stdin.on("error", () => undefined);
  let closed = false;
  const exited = new Promise<number>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => {
      closed = true;
      resolve(code ?? 1);
    });
  });
  let bytes = 0;
  try {
    for (let next = await head; next.done !== true; next = await replies.next()) {
      if (closed) break; // index-pack gave up: its exit code below says why
      const chunk = next.value;
      bytes += chunk.data.byteLength;
      if (!child.stdin.write(chunk.data)) await Promise.race([new Promise((resolve) => child.stdin.once("drain", resolve)), exited]);
    }
  } catch (error) {
    child.kill("SIGKILL");
    throw error;
  } finally {
    // Leaving early (index-pack gave up, or an error) cancels the call, as the for-await did.
    await replies.return?.(undefined);
    child.stdin.end();
  }
  const code = await exited;
  if (code !== 0) throw new Error(`git index-pack failed (${code}) on the pack the daemon sent`);
  say(verbose, `fetched ${bytes} bytes`);
}

interface Spec {
  readonly force: boolean;
  readonly src: string;
  readonly dst: string;
}

function parseSpec(text: string): Spec {
  const force = text.startsWith("+");
  const body = force ? text.slice(1) : text;
  const at = body.indexOf(":");
  return { force, src: at < 0 ? body : body.slice(0, at), dst: at < 0 ? body : body.slice(at + 1) };
}

async function push(
  client: Client,
  texts: string[],
  listed: Listed[],
  verbose: number,
  ahead: PushAhead = startPushAhead(),
  whoAmI: Promise<{ seat: string }> = client.whoAmI(),
): Promise<string[]> {
  whoAmI.catch(() => undefined);
  try {
    return await pushWith(client, texts, listed, verbose, ahead, whoAmI);
  } finally {
    // Whatever of them still runs: the daemon answered before the pack's end, or the push went another way.
    ahead.stop();
  }
}

async function pushWith(
  client: Client,
  texts: string[],
  listed: Listed[],
  verbose: number,
  ahead: PushAhead,
  whoAmI: Promise<{ seat: string }>,
): Promise<string[]> {
  const specs = texts.map(parseSpec);
  // Asked beside the listing, or else as the push began (issue 26: no round trip in line); awaited before its answer is needed.
  const known = new Map(listed.map((r) => [r.name, r.oid]));
  const sources = specs.filter((spec) => spec.src !== "").map((spec) => spec.src);
  const listedOids = [...new Set(known.values())].filter((oid) => OBJECT_ID.test(oid));
  // The pushed tips and which of the daemon's refs this repository has: from the front's pack
  // where it already says, else in one process.
  const named = namedByFront(ahead.pack, sources, listedOids) ?? (await commitsNamed([...sources, ...listedOids], ahead.named()));
  const tipOf = new Map(sources.map((src, i) => [src, named[i]]));
  const newOids = specs.map((spec) => {
    if (spec.src === "") return "";
    const oid = tipOf.get(spec.src);
    if (oid === undefined) throw new Error(`${spec.src} does not name a commit in this repository`);
    return oid;
  });
  const tips = newOids.filter((o) => o !== "");
  const exclude = listedOids.filter((_oid, i) => named[sources.length + i] !== undefined);
  const me = (await whoAmI).seat;
  const updates = specs.map((spec, i) => {
    // What the daemon holds for the destination, by the name it lands on.
    const landing = spec.dst.startsWith(`refs/heads/seat/`) ? spec.dst : spec.dst.replace(/^refs\/heads\//, `refs/heads/seat/${me}/`);
    return { ref: spec.dst, oldOid: known.get(landing) ?? "", newOid: newOids[i] ?? "", force: spec.force };
  });
  // The pack made on the push's guess (push-guess.ts) is sent only if it is this push's: one
  // tip, the one guessed, and the same commits left out. Else it is stopped and made afresh.
  const guess = ahead.pack.guess;
  // A guess whose pack-objects already failed (a noted commit gone since) is made afresh too.
  const guessed = guess !== undefined && tips.length === 1 && tips[0] === guess.tip && sameSet(exclude, guess.excludes) && !ahead.pack.failed();
  if (guessed) {
    const when = ahead.pack.front === true ? ", from the helper's front" : ahead.pack.early === true ? ", from the helper's start" : "";
    say(verbose - 1, `the pack was made on the push's guess${when}`);
  } else if (guess !== undefined) {
    if (tips.length > 0) ahead.restartPack();
    else ahead.pack.stop();
  }
  try {
    // The pack goes to the daemon as pack-objects writes it (issue 26). Where the seat has its
    // tmp folder (TEAMD_TMP), pack-objects writes it to a file there and the daemon reads the
    // file once it is whole (seat-pack-file.ts): the socket's messages each waited a round trip
    // on HTTP/2's window. Otherwise it streams over the socket, the daemon holding it to the
    // seat's quota as it arrives, as it does the file.
    const packing = tips.length > 0 ? packObjects(ahead.pack, tips, exclude) : undefined;
    const file = packing !== undefined ? ahead.pack.file : undefined;
    let sent = 0;
    async function* parts() {
      const header = { requestId: randomUUID(), updates, packStreamed: packing !== undefined && file === undefined, packFile: file?.name ?? "" };
      yield { part: { case: "header" as const, value: header } };
      if (packing === undefined) return;
      if (file !== undefined) {
        await packing.done;
        sent = statSync(file.path).size;
        yield { part: { case: "written" as const, value: { bytes: BigInt(sent) } } };
        say(verbose, `pushed ${sent} bytes to the daemon`);
        return;
      }
      for await (const chunk of packing.output) {
        for (let at = 0; at < chunk.byteLength; at += CHUNK) {
          const part = chunk.subarray(at, at + CHUNK);
          sent += part.byteLength;
          yield { part: { case: "data" as const, value: part } };
        }
      }
      // A pack-objects that failed has sent a pack cut short: the call is cancelled (the
      // daemon takes in nothing of it) and git is told why.
      await packing.done;
      say(verbose, `pushed ${sent} bytes to the daemon`);
    }
    const reply = await client.push(parts());
    // What the daemon now holds, for the next push's guess: its listing, with what landed moved.
    const landed = reply.results.flatMap((r) => {
      const update = updates.find((u) => u.ref === r.ref);
      return r.ok && update !== undefined && r.hubRef !== "" ? [{ hubRef: r.hubRef, oid: update.newOid }] : [];
    });
    recordPushed(process.env.GIT_DIR, heldAfter(listed, new Set(exclude), landed));
    return reply.results.map((r) => {
      if (r.ok) {
        if (r.hubRef && r.hubRef !== r.ref) say(verbose, `${r.ref.replace("refs/heads/", "")} landed on ${r.hubRef.replace("refs/heads/", "")}`);
        return `ok ${r.ref}`;
      }
      return `error ${r.ref} teamd: ${r.rule}: ${r.reason.replace(/\n/g, " ")}`;
    });
  } catch (error) {
    if (error instanceof RefusalError) return specs.map((s) => `error ${s.dst} teamd: ${error.rule}: ${error.reason.replace(/\n/g, " ")}`);
    throw error;
  }
}

/** The helper's client; `sent`: the push's listing and whoAmI, already written on `early` by the front (first-calls.ts): the calls are answered on them. */
function helperClient(socket: string, early?: Socket, sent?: Buffer): Client {
  return createRpcClient(ShimService, socket, {
    deadlineMs: 30_000,
    ...(early !== undefined ? { socket: early } : {}),
    ...(early !== undefined && sent !== undefined ? { sent: { bytes: sent, calls: pushCalls() } } : {}),
  });
}

/**
 * The calls of a push as the helper makes them — its listing and whoAmI written first on the
 * socket, as the front writes them, then a push of one ref and a pack file — made once by the
 * build against a loopback server (scripts/build-shim.ts), so that V8's code cache of the lazy
 * part holds the client's, HTTP/2's and protobuf's code for them compiled. Each helper is a fresh
 * process, and compiling that code as it first ran was ~10 ms of its one thread between its start
 * and the push's header (issue 26). Nothing in a seat runs this.
 */
export async function warmPushCalls(socket: string): Promise<void> {
  const sent = sentCalls(pushCalls());
  const early = connect(socket);
  early.on("error", () => undefined);
  early.write(sent);
  const client = helperClient(socket, early, sent);
  try {
    client.connect();
    await Promise.all([client.listRefs({ forPush: true }), client.whoAmI()]);
    const update = { ref: "refs/heads/warm", oldOid: "", newOid: "1".repeat(40), force: false };
    await client.push(
      (async function* () {
        yield {
          part: { case: "header" as const, value: { requestId: randomUUID(), updates: [update], packStreamed: false, packFile: ".teamd-pack-warm.pack" } },
        };
        yield { part: { case: "written" as const, value: { bytes: 1n } } };
      })(),
    );
  } finally {
    client.close();
  }
}

/**
 * A push's git processes, started before their input is known (issue 26): each start is a few
 * milliseconds in a seat, and the listing's round trip, which comes first, is longer. `stop`
 * kills whichever still runs (the push ended, or went another way).
 */
export interface PushAhead {
  /**
   * `git cat-file --batch-check` for commitsNamed, its output gathered from the start: `answer(n)`
   * once it printed n lines (one a revision asked), or it ended — not its exit, ~2 ms later in a seat.
   * Started ahead only where the front's pack is not there: with it, namedByFront answers all but
   * an unusual push (several refs, a source other than HEAD's commit), and the start ahead was a
   * fork of this process, ~4-8 ms of its one thread in a seat between git's listing and the
   * push's header, for a process then stopped unused (issue 26).
   */
  readonly named: () => { readonly child: ChildProcessByStdio<Writable, Readable, null>; answer(lines: number): Promise<string | undefined> };
  /** The pack's `git pack-objects`: given the push's guess from its start where there is one. */
  readonly pack: Packer;
  /** Stop the pack made on a guess that was not this push's, and start one that waits for its input. */
  restartPack(): void;
  stop(): void;
}

/** The push's processes, with the pack on its guess where one was started already. */
export function startPushAhead(guessed?: Packer): PushAhead {
  let pack = guessed;
  let named: ReturnType<PushAhead["named"]> | undefined;
  let stopped = false;
  const startNamed = () => {
    if (named !== undefined) return named;
    const catFile = spawn("git", ["cat-file", "--batch-check=%(objectname) %(objecttype)"], { stdio: ["pipe", "pipe", "ignore"] });
    let text = "";
    let wanted = Number.POSITIVE_INFINITY;
    let answered: ((text: string | undefined) => void) | undefined;
    const answer = new Promise<string | undefined>((resolve) => (answered = resolve));
    const enough = () => {
      let lines = 0;
      for (let at = text.indexOf("\n"); at >= 0 && lines < wanted; at = text.indexOf("\n", at + 1)) lines += 1;
      if (lines >= wanted) answered?.(text);
    };
    catFile.stdout.on("data", (chunk: Buffer) => {
      text += chunk.toString();
      enough();
    });
    catFile.stdin.on("error", () => undefined);
    catFile.on("error", () => answered?.(undefined));
    catFile.on("close", (code) => answered?.(code === 0 ? text : undefined));
    // Asked after the helper stopped (it does not): the process goes at once.
    if (stopped) stopChild(catFile);
    named = {
      child: catFile,
      answer: (lines) => {
        wanted = lines;
        enough();
        return answer;
      },
    };
    return named;
  };
  if (pack?.front !== true) startNamed();
  pack ??= startPacker(undefined);
  return {
    named: startNamed,
    get pack() {
      return pack as Packer;
    },
    restartPack() {
      pack?.stop();
      pack = startPacker(undefined);
    },
    stop: () => {
      stopped = true;
      if (named !== undefined) stopChild(named.child);
      pack?.stop();
    },
  };
}

/**
 * What commitsNamed would answer, without waiting on cat-file, where the pack the helper's front
 * made already says it (issue 26: ~2.5 ms of a push): one source, naming in this repository's
 * files (HEAD, or a plain ref) the commit the front packed, and the daemon's listed commits
 * exactly those the pack left out — each of which pack-objects, having exited 0, found here.
 */
function namedByFront(pack: Packer, sources: readonly string[], listedOids: readonly string[]): (string | undefined)[] | undefined {
  const guess = pack.guess;
  if (pack.front !== true || guess === undefined || !pack.succeeded() || sources.length !== 1 || listedOids.length === 0) return undefined;
  if (localCommit(process.env.GIT_DIR, sources[0] as string) !== guess.tip || !sameSet(listedOids, guess.excludes)) return undefined;
  return [guess.tip, ...listedOids];
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  const left = new Set(a);
  const right = new Set(b);
  return left.size === right.size && [...left].every((x) => right.has(x));
}

/** The pack of `tips` less `exclude` from the started pack-objects (given them already if it packed this push's guess), its output as it comes; `done` settles once it has exited (an Error on a non-zero exit). */
function packObjects(started: Packer, tips: readonly string[], exclude: readonly string[]): { output: AsyncIterable<Buffer>; done: Promise<void> } {
  if (started.guess === undefined) started.input(revisions(tips, exclude));
  return { output: started.output ?? (async function* () {})(), done: started.done };
}

/**
 * The commit each revision names in this repository (as `git rev-parse --verify REV^{commit}`
 * would), or undefined where it names none, asked in one `git cat-file --batch-check` (issue 26:
 * a push asked rev-parse for each of its tips, then cat-file for the daemon's refs — two process
 * starts in line, ~10 ms each in a seat, where one answers both). A revision that cannot be a
 * line of cat-file's input (whitespace, a control character) names none; git never sends one.
 * Where git cannot answer at all (no repository), none is named.
 */
async function commitsNamed(revisions: readonly string[], started: ReturnType<PushAhead["named"]>): Promise<(string | undefined)[]> {
  const asked = revisions.filter((rev) => rev !== "" && !/[\s\x00-\x1f\x7f]/.test(rev));
  started.child.stdin.end(asked.map((rev) => `${rev}^{commit}\n`).join(""));
  if (asked.length === 0) return revisions.map(() => undefined);
  const answer = await started.answer(asked.length);
  const lines = answer?.split("\n") ?? [];
  const byRevision = new Map<string, string | undefined>();
  asked.forEach((rev, i) => {
    const [oid, type] = (lines[i] ?? "").split(" ");
    byRevision.set(rev, type === "commit" && oid !== undefined && OBJECT_ID.test(oid) ? oid : undefined);
  });
  return revisions.map((rev) => byRevision.get(rev));
}

function gitText(args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn("git", args, { stdio: ["ignore", "pipe", "inherit"] });
    let text = "";
    child.stdout.on("data", (chunk: Buffer) => (text += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(text) : reject(new Error(`git ${args.join(" ")} failed (${code})`))));
  });
}
