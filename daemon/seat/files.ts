import type { MessageInitShape } from "@bufbuild/protobuf";
import { TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import type {
  FileReadResponseSchema,
  FileStatResponseSchema,
  FileWriteHeader,
  FileWriteRequest,
  FileWriteResponseSchema,
} from "../../src/gen/teamd/v1/shim_pb.js";
import { canonicalPath, refuse } from "../../src/kernel/index.js";
import { noteRule } from "../../src/kernel/rules.js";
import { commitMessageProblem, gitMetaFileProblem, gitPathProblem, refConflict, refNameProblem } from "../../src/kernel/git-names.js";
import { seatGitLimits } from "../../src/effects/contained-git.js";
import { git, gitInput, treeOfCommit } from "../../src/effects/git.js";
import { readRef, RefMoved } from "../../src/effects/git-receive.js";
import { explainRefFailure, RefBusy, RefConflict, retryRefLock } from "../../src/effects/ref-lock.js";
import { withScratchIndex } from "../../src/effects/git-scratch-index.js";
import { seatStorage } from "../../src/effects/git-storage.js";
import type { TeamdHome } from "../host/home.js";
import { gitWorkDir } from "../host/seat-layout.js";
import { DURABLE_GIT, syncNewObjects, syncRefFolders } from "../../src/effects/durable-git.js";
import { requestBytes, runFields, type SeatContext, type SeatPipeline, type SeatIdentity } from "./pipeline.js";
import { boundText, RECORD_NAME_BYTES } from "../../src/ledger/bounded-text.js";

/**
 * `teamd-shim file stat|read|write`: one file of the team's repository through the daemon,
 * for a seat that must not (or need not) hold a clone of it — a write the seat may make
 * without reading, a read of one file. The repository is the team's one declared root.
 *
 * Reads and stats come from the trunk in the hub and are decided as read over that path
 * (every disclosure of file contents is a read, §3). A write is a commit on the seat's own
 * branch in the hub, decided as write over that path, recorded as intent and outcome like a
 * push; it never touches the trunk or the owner's tree.
 *
 * The content travels in chunks (the seat socket's receive cap is 256 KiB, issue 20): a read
 * streams it back in READ_CHUNK_BYTES messages; a write sends a header declaring the size,
 * then the bytes, counted as they arrive — never more than the header declares, never more
 * than MAX_FILE_BYTES. The daemon holds at most MAX_CONTENTS_PER_SEAT contents of one seat
 * at once (each at most MAX_FILE_BYTES); a seat's further reads and writes wait their turn.
 */
/** File read and stat show the trunk (the hub's HEAD). */
const TRUNK_TARGET = { kind: TargetKind.REF, name: "HEAD" };

export const MAX_FILE_BYTES = 8 * 1024 * 1024;

/** The messages a read's content is streamed in. */
export const READ_CHUNK_BYTES = 256 * 1024;

/** File contents of one seat the daemon holds at once (reads and writes together). */
export const MAX_CONTENTS_PER_SEAT = 2;

export interface SeatFiles {
  stat(identity: SeatIdentity, path: string): Promise<MessageInitShape<typeof FileStatResponseSchema>>;
  /** The content in order, the first message naming the blob and the size; every refusal comes before the first. */
  read(identity: SeatIdentity, path: string): AsyncIterable<MessageInitShape<typeof FileReadResponseSchema>>;
  /** A header, then the content's bytes. */
  write(identity: SeatIdentity, parts: AsyncIterable<FileWriteRequest>): Promise<MessageInitShape<typeof FileWriteResponseSchema>>;
}

/** One seat's turn to hold a file content in the daemon: resolves when it may, with its release. */
type ContentTurn = (seat: string) => Promise<() => void>;

function contentTurns(max: number): ContentTurn {
  const seats = new Map<string, { held: number; waiting: (() => void)[] }>();
  return async (seat) => {
    let entry = seats.get(seat);
    if (entry === undefined) {
      entry = { held: 0, waiting: [] };
      seats.set(seat, entry);
    }
    const mine = entry;
    if (mine.held >= max) await new Promise<void>((resolve) => mine.waiting.push(resolve));
    else mine.held += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = mine.waiting.shift();
      if (next !== undefined) return next(); // the turn passes on; held stays
      mine.held -= 1;
      if (mine.held === 0) seats.delete(seat);
    };
  };
}

const KINDS: Readonly<Record<string, string>> = { "100644": "file", "100755": "executable", "120000": "symlink", "040000": "directory", "160000": "submodule" };

/** Each folder above a canonical path, outermost first: `a/b/c` -> `a`, `a/b`. */
function parentsOf(path: string): string[] {
  const parts = path.split("/");
  return parts.slice(1).map((_, i) => parts.slice(0, i + 1).join("/"));
}

interface Entry {
  readonly mode: string;
  readonly oid: string;
  readonly size: number;
}

export interface SeatFilesDeps {
  readonly home: TeamdHome;
  readonly pipeline: SeatPipeline;
  /** A fresh unique id (the composition root's): names a write's scratch index. */
  readonly newId: () => string;
  /** The team's live runs by seat: a write's commit is authored by the run that made it (its intent names the run). */
  runs(team: string): Readonly<Record<string, { readonly run: string; readonly home: string }>>;
  /**
   * The seat's storage quota in the hub, the same a push meets (`push.quota`, the owner's
   * TEAMD_SEAT_GIT_BOUNDS): a file write makes branches and objects too. Unset: not checked.
   */
  readonly quota?: { readonly refs: number; readonly bytes: number; readonly objects: number };
  /** The `cgroup.procs` files of the seat's own cgroups while it runs with them: the quota's walk joins them. */
  seatCgroups?(identity: SeatIdentity): Promise<readonly string[] | undefined>;
}

export function createSeatFiles(deps: SeatFilesDeps): SeatFiles {
  const turn = contentTurns(MAX_CONTENTS_PER_SEAT);
  const seatKey = (identity: SeatIdentity) => `${identity.team}.${identity.seat}`;

  async function canonical(ctx: SeatContext, path: string, action: string): Promise<string> {
    const result = canonicalPath(path);
    if (!result.ok) throw await deps.pipeline.refuse(ctx, refuse("request.malformed", `'${path}' is not a repository path: ${result.reason}`), action);
    return result.path;
  }

  async function entry(ref: string, path: string, hub: string): Promise<Entry | undefined> {
    const listed = await git(["ls-tree", "-l", "--full-tree", "-z", ref, "--", path], { gitDir: hub });
    const line = listed.stdout.split("\0").find((l) => l.endsWith(`\t${path}`));
    if (line === undefined) return undefined;
    const [meta = ""] = line.split("\t");
    const [mode = "", , oid = "", size = "0"] = meta.split(/\s+/);
    return { mode, oid, size: size === "-" ? 0 : Number(size) };
  }

  /** The path and each folder above it, as they stand on `ref` (one ls-tree; a missing ref is an empty tree). */
  async function entries(ref: string, path: string, hub: string): Promise<ReadonlyMap<string, Entry>> {
    const listed = await git(["ls-tree", "-l", "--full-tree", "-z", ref, "--", ...parentsOf(path), path], { gitDir: hub }).catch(() => undefined);
    const found = new Map<string, Entry>();
    for (const line of listed?.stdout.split("\0") ?? []) {
      const tab = line.indexOf("\t");
      if (tab < 0) continue;
      const [mode = "", , oid = "", size = "0"] = line.slice(0, tab).split(/\s+/);
      found.set(line.slice(tab + 1), { mode, oid, size: size === "-" ? 0 : Number(size) });
    }
    return found;
  }

  async function readable(identity: SeatIdentity, path: string, action: string): Promise<{ ctx: SeatContext; path: string; found: Entry | undefined }> {
    const ctx = await deps.pipeline.context(identity, action);
    const clean = await canonical(ctx, path, action);
    await deps.pipeline.decide(ctx, { capability: "read", effect: { paths: [clean] } }, action);
    return { ctx, path: clean, found: await entry("HEAD", clean, ctx.team.hub) };
  }

  return {
    async stat(identity, path) {
      const { ctx, path: clean, found } = await readable(identity, path, "file.stat");
      // What it was shown: the path, and whether and what it is (§3).
      await deps.pipeline.served(ctx, {
        action: "file.stat",
        // What it was shown, not only where: a stat whose answer changed is another serve.
        subject: `${clean}\0${found?.mode ?? "-"}\0${found?.oid ?? "absent"}`,
        target: TRUNK_TARGET,
        fields: [
          { key: "path", value: boundText(clean, RECORD_NAME_BYTES) },
          ...(found === undefined
            ? [{ key: "exists", value: "false" }]
            : [
                { key: "size", value: String(found.size) },
                { key: "oid", value: found.oid },
              ]),
        ],
      });
      if (found === undefined) return { exists: false };
      return { exists: true, kind: KINDS[found.mode] ?? found.mode, size: BigInt(found.size), oid: found.oid };
    },

    async *read(identity, path) {
      const { ctx, path: clean, found } = await readable(identity, path, "file.read");
      if (found === undefined) throw await deps.pipeline.refuse(ctx, refuse("file.kind", `${clean} does not exist on the trunk`), "file.read");
      if (found.mode !== "100644" && found.mode !== "100755") {
        throw await deps.pipeline.refuse(ctx, refuse("file.kind", `${clean} is a ${KINDS[found.mode] ?? found.mode}, not a regular file`), "file.read");
      }
      if (found.size > MAX_FILE_BYTES) {
        throw await deps.pipeline.refuse(
          ctx,
          refuse("file.kind", `${clean} is ${found.size} bytes; file read returns at most ${MAX_FILE_BYTES} (read it through git fetch teamd)`),
          "file.read",
        );
      }
      // On record before the content leaves: the path, its size and blob id — never the content (§3).
      await deps.pipeline.served(ctx, {
        action: "file.read",
        subject: `${clean}\0${found.oid}`,
        target: TRUNK_TARGET,
        fields: [
          { key: "path", value: boundText(clean, RECORD_NAME_BYTES) },
          { key: "size", value: String(found.size) },
          { key: "oid", value: found.oid },
        ],
      });
      const release = await turn(seatKey(identity));
      try {
        const blob = await gitInput(["cat-file", "blob", found.oid], ctx.team.hub, "");
        const size = BigInt(blob.byteLength);
        if (blob.byteLength === 0) yield { content: blob, oid: found.oid, size };
        for (let at = 0; at < blob.byteLength; at += READ_CHUNK_BYTES) {
          yield { content: blob.subarray(at, at + READ_CHUNK_BYTES), ...(at === 0 ? { oid: found.oid, size } : {}) };
        }
      } finally {
        release();
      }
    },

    async write(identity, parts) {
      const incoming = parts[Symbol.asyncIterator]();
      const first = await incoming.next();
      const ctx = await deps.pipeline.context(identity, "file.write");
      if (first.done === true || first.value.part.case !== "header") {
        throw await deps.pipeline.refuse(ctx, refuse("request.malformed", "a file write sends its header first, then the content"), "file.write");
      }
      const header = first.value.part.value;
      const clean = await canonical(ctx, header.path, "file.write");
      // What git would refuse inside the effect is refused here, before the intent (§15: unknown
      // is only for an effect that may or may not have happened): a path git's verify_path
      // refuses (an HFS+ or NTFS alias of .git among them), a message git cannot take, a branch
      // name that is no ref name or cannot live beside the refs that exist.
      const pathProblem = gitPathProblem(clean);
      if (pathProblem !== undefined) throw await deps.pipeline.refuse(ctx, refuse("git.path", `${JSON.stringify(clean)}: ${pathProblem}`), "file.write");
      // What fsck reads of a push's .gitmodules and .gitattributes (the name here, the content once it is in).
      const metaProblem = gitMetaFileProblem(clean, new Uint8Array());
      if (metaProblem !== undefined) throw await deps.pipeline.refuse(ctx, refuse("git.path", `${JSON.stringify(clean)}: ${metaProblem}`), "file.write");
      const messageProblem = commitMessageProblem(header.message);
      if (messageProblem !== undefined) throw await deps.pipeline.refuse(ctx, refuse("git.message", messageProblem), "file.write");
      if (header.size > BigInt(MAX_FILE_BYTES)) {
        throw await deps.pipeline.refuse(
          ctx,
          refuse("file.kind", `the content is ${header.size} bytes; file write takes at most ${MAX_FILE_BYTES} (push it instead)`),
          "file.write",
        );
      }
      const declared = Number(header.size);
      const hub = ctx.team.hub;
      const trunk = (await git(["symbolic-ref", "--short", "HEAD"], { gitDir: hub })).stdout.trim();
      const branch = header.branch || trunk;
      if (branch.startsWith("seat/"))
        throw await deps.pipeline.refuse(
          ctx,
          refuse("push.ref", `name the branch without its seat/ prefix ('${branch}'): file write commits to seat/${identity.seat}/<branch>`),
          "file.write",
        );
      const ref = `refs/heads/seat/${identity.seat}/${branch}`;
      const refProblem = refNameProblem(ref);
      if (refProblem !== undefined)
        throw await deps.pipeline.refuse(ctx, refuse("git.ref-name", `${JSON.stringify(branch)} lands on ${JSON.stringify(ref)}: ${refProblem}`), "file.write");
      const refs = (await git(["for-each-ref", "--format=%(refname)", "refs/"], { gitDir: hub })).stdout.split("\n").filter((line) => line !== "");
      const conflict = refs.includes(ref) ? undefined : refConflict(ref, refs);
      if (conflict !== undefined) throw await deps.pipeline.refuse(ctx, refuse("git.ref-name", conflict), "file.write");
      // What the commit will be made on: the seat's branch, or the trunk where it has none yet.
      // Every shape git's index would refuse is refused here, before the intent — a folder where
      // the file goes, a file where a folder of the path goes — so no bad path becomes an
      // unknown outcome (§15: unknown is for an effect that may have happened).
      const base = refs.includes(ref) ? ref : `refs/heads/${trunk}`;
      // The commit the shapes are judged on is the commit the file is written on: pinned here, so
      // a second write of the seat's racing this one cannot change the tree under it (it moves the
      // branch, and this write's compare-and-swap is then refused push.stale — never unknown).
      const baseCommit = (await git(["rev-parse", "--verify", `${base}^{commit}`], { gitDir: hub })).stdout.trim();
      const shapes = await entries(baseCommit, clean, hub);
      const existing = shapes.get(clean);
      if (existing !== undefined && existing.mode !== "100644" && existing.mode !== "100755") {
        throw await deps.pipeline.refuse(
          ctx,
          refuse("file.kind", `${clean} is a ${KINDS[existing.mode] ?? existing.mode} on ${base}; file write replaces regular files only`),
          "file.write",
        );
      }
      const blocking = parentsOf(clean).find((parent) => shapes.has(parent) && shapes.get(parent)?.mode !== "040000");
      if (blocking !== undefined) {
        const kind = KINDS[shapes.get(blocking)?.mode ?? ""] ?? "file";
        throw await deps.pipeline.refuse(ctx, refuse("git.path", `${blocking} is a ${kind} on ${base}, so ${clean} cannot sit under it`), "file.write");
      }
      if (deps.quota !== undefined) {
        // The quota a push meets, before the content is taken in (an outside attack made 562
        // branches through file write past the 512 a push may hold).
        const quota = deps.quota;
        const prefix = `refs/heads/seat/${identity.seat}/`;
        const over = (what: string) =>
          deps.pipeline.refuse(ctx, refuse("push.quota", `${what}; delete branches you no longer need (git push teamd --delete <branch>)`), "file.write");
        const mine = refs.filter((r) => r.startsWith(prefix)).length + (refs.includes(ref) ? 0 : 1);
        if (mine > quota.refs) throw await over(`your branches would number ${mine}; a seat may hold at most ${quota.refs}`);
        const cgroupProcs = (await deps.seatCgroups?.(identity)) ?? [];
        const memoryBytes = ctx.seat.start?.limits !== undefined && ctx.seat.start.limits !== "none" ? ctx.seat.start.limits.memoryBytes : undefined;
        const limits = { limits: seatGitLimits(cgroupProcs, memoryBytes) };
        // The objects the write makes: its blob, a tree for each folder of the path and the
        // root's, and its commit (they were not counted: found by an attack, round twelve).
        const made = clean.split("/").length + 2;
        // Without the contained walks where the whole hub with this file is under the quota.
        const storage = await seatStorage(hub, prefix, {
          ...limits,
          enough: (atMost) => atMost.bytes + declared <= quota.bytes && atMost.objects + made <= quota.objects,
        });
        if (storage.bytes + declared > quota.bytes)
          throw await over(`your branches hold ${storage.bytes} bytes in the hub and this file is ${declared}; a seat may hold at most ${quota.bytes}`);
        if (storage.objects + made > quota.objects)
          throw await over(`your branches hold ${storage.objects} objects in the hub and this write makes ${made}; a seat may hold at most ${quota.objects}`);
      }
      const target = { kind: TargetKind.REF, name: ref } as const;
      const release = await turn(seatKey(identity));
      const reply = await (async () => {
        // The content, counted as it arrives: never past what the header declared (at most MAX_FILE_BYTES).
        const chunks: Uint8Array[] = [];
        let bytes = 0;
        for (let next = await incoming.next(); next.done !== true; next = await incoming.next()) {
          if (next.value.part.case !== "data") {
            throw await deps.pipeline.refuse(ctx, refuse("request.malformed", "a file write sends one header, then only the content"), "file.write");
          }
          bytes += next.value.part.value.byteLength;
          if (bytes > MAX_FILE_BYTES) {
            throw await deps.pipeline.refuse(
              ctx,
              refuse("file.kind", `the content is more than ${MAX_FILE_BYTES} bytes; file write takes at most ${MAX_FILE_BYTES} (push it instead)`),
              "file.write",
            );
          }
          if (bytes > declared) {
            throw await deps.pipeline.refuse(
              ctx,
              refuse("request.malformed", `the content is more than the ${declared} bytes its header declares`),
              "file.write",
            );
          }
          chunks.push(next.value.part.value);
        }
        if (bytes !== declared) {
          throw await deps.pipeline.refuse(
            ctx,
            refuse("request.malformed", `the content ended after ${bytes} of the ${declared} bytes its header declares`),
            "file.write",
          );
        }
        const content = Buffer.concat(chunks);
        const contentProblem = gitMetaFileProblem(clean, content);
        if (contentProblem !== undefined)
          throw await deps.pipeline.refuse(ctx, refuse("git.path", `${JSON.stringify(clean)}: ${contentProblem}`), "file.write");
        return deps.pipeline.act(
          ctx,
          { capability: "write", effect: { paths: [clean] } },
          {
            action: "file.write",
            target,
            requestId: header.requestId,
            request: requestBytes([ref, clean, header.message, content]),
            treeHash: await treeOfCommit(hub, baseCommit),
            // Who wrote it: the commit is this run's (issue 24, item 13), as a push's are. Before:
            // the branch's tip it is written on, where the branch exists.
            payload: {
              ...(refs.includes(ref) ? { before: { identity: { case: "gitCommit", value: baseCommit } } } : {}),
              fields: runFields(deps.runs(ctx.identity.team)[ctx.identity.seat]),
            },
          },
          async () => {
            try {
              const commit = await commitFile(
                hub,
                ref,
                { parent: baseCommit, old: refs.includes(ref) ? baseCommit : undefined },
                clean,
                header,
                content,
                identity,
                existing?.mode ?? "100644",
                gitWorkDir(deps.home).quarantine,
                deps.newId(),
              );
              return { result: "done", reply: new TextEncoder().encode(commit) };
            } catch (error) {
              // The branch moved or stayed locked: nothing moved, so refused with its rule — never unknown (§15).
              if (error instanceof RefMoved) return { result: "refused", note: `push.stale: ${error.message}; write again` };
              if (error instanceof RefBusy) return { result: "refused", note: `git.ref-busy: ${error.message}; write again` };
              if (error instanceof RefConflict) return { result: "refused", note: `git.ref-name: ${error.message}` };
              throw error;
            }
          },
        );
      })().finally(release);
      if (reply.status === "unknown") throw deps.pipeline.outcomeRefusal(ctx, refuse("ledger.unknown-outcome", reply.note || "the write's outcome is unknown"));
      if (reply.status !== "done") {
        const named = noteRule(reply.note);
        throw deps.pipeline.outcomeRefusal(
          ctx,
          named !== undefined ? refuse(named.rule, named.reason) : refuse("push.stale", reply.note || `the write's outcome is ${reply.status}`),
        );
      }
      return { hubRef: ref, commit: new TextDecoder().decode(reply.reply) };
    },
  };
}

/**
 * One commit on `on.parent` (the seat's branch, or the trunk where it has none, as the checks saw
 * it), compare-and-swapped onto the branch from `on.old` (undefined: the branch must not exist).
 * Exported for test/effects/durable-git.test.ts.
 */
export async function commitFile(
  hub: string,
  ref: string,
  on: { readonly parent: string; readonly old: string | undefined },
  path: string,
  request: FileWriteHeader,
  content: Uint8Array,
  identity: SeatIdentity,
  mode: string,
  scratch: string,
  id: string,
): Promise<string> {
  const { parent, old: base } = on;
  const author = {
    GIT_AUTHOR_NAME: `seat ${identity.seat}`,
    GIT_AUTHOR_EMAIL: `${identity.seat}@${identity.team}.teamd`,
    GIT_COMMITTER_NAME: "teamd",
    GIT_COMMITTER_EMAIL: "teamd@localhost",
  };
  return withScratchIndex(scratch, id, async (index) => {
    const env = { GIT_INDEX_FILE: index };
    // Its objects and ref are on disk before the outcome says the file was written (durable-git.ts).
    const blob = (await gitInput([...DURABLE_GIT, "hash-object", "-w", "--stdin"], hub, content)).toString("utf8").trim();
    await git(["read-tree", parent], { gitDir: hub, env });
    await git(["update-index", "--add", "--cacheinfo", `${mode},${blob},${path}`], { gitDir: hub, env });
    const tree = (await git([...DURABLE_GIT, "write-tree"], { gitDir: hub, env })).stdout.trim();
    const message = request.message || `teamd-shim file write ${path}`;
    const commit = (await git([...DURABLE_GIT, "commit-tree", tree, "-p", parent, "-m", message], { gitDir: hub, env: author })).stdout.trim();
    await syncNewObjects(hub, commit, [parent]);
    // Compare-and-swap; a lock another update holds is tried again, then refused (ref-lock.ts).
    await retryRefLock(ref, async () => {
      try {
        await git([...DURABLE_GIT, "update-ref", ref, commit, base ?? "0000000000000000000000000000000000000000"], { gitDir: hub });
      } catch (error) {
        const now = await readRef(hub, ref);
        if (now === commit) return;
        if (now !== base) throw new RefMoved(ref, base, now);
        throw await explainRefFailure(hub, ref, error);
      }
    });
    await syncRefFolders(hub, ref);
    return commit;
  });
}
