import { constants } from "node:fs";
import { open, readdir, rename, writeFile, unlink } from "node:fs/promises";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { parse, stringify } from "yaml";
import { LIMITS, TrackerError, checkTaskId, clip, type TaskSummary, type Tracker } from "./tracker.js";

/**
 * The local file tracker, the broker's embedded default: a folder of Markdown tasks, one file
 * per task (`<id>.md`), each opening with a small front matter —
 *
 *     ---
 *     title: Fix the login redirect
 *     state: open            # open (default) | closed | anything the owner writes
 *     labels: [bug, web]
 *     assignee: alice
 *     ---
 *     What is wrong and what done looks like.
 *
 * A claim writes `claimed-by: <team>/<seat>` into the front matter (atomically: a fresh file
 * renamed over the old). The folder is the owner's, outside every seat's view; files are read
 * without following links.
 */
const MAX_TASK_BYTES = 1024 * 1024;
const FRONT = /^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/;

interface ParsedTask {
  readonly front: Record<string, unknown>;
  readonly body: string;
  /** The file as the owner wrote it: a comment is appended to it, nothing else rewritten. */
  readonly raw?: string;
}

function parseTask(text: string, id: string): ParsedTask {
  const m = FRONT.exec(text);
  if (m === null) return { front: {}, body: text, raw: text };
  let front: unknown;
  try {
    front = parse(m[1] as string);
  } catch {
    throw new TrackerError("upstream", `task ${id}'s front matter is not valid YAML; the owner fixes the file`);
  }
  if (front !== null && (typeof front !== "object" || Array.isArray(front))) throw new TrackerError("upstream", `task ${id}'s front matter is not a map`);
  return { front: (front ?? {}) as Record<string, unknown>, body: text.slice(m[0].length), raw: text };
}

const str = (v: unknown): string => (typeof v === "string" ? v : typeof v === "number" ? String(v) : "");

function summary(id: string, task: ParsedTask): TaskSummary {
  const labels = Array.isArray(task.front.labels) ? task.front.labels : typeof task.front.labels === "string" ? task.front.labels.split(",") : [];
  return {
    id,
    title: clip(str(task.front.title), LIMITS.title),
    state: clip(str(task.front.state) || "open", 32),
    labels: labels
      .slice(0, LIMITS.labels)
      .map((l) => clip(str(l).trim(), LIMITS.label))
      .filter((l) => l !== ""),
    assignee: clip(str(task.front.assignee), LIMITS.login),
    url: "",
    claimed: str(task.front["claimed-by"]) !== "",
  };
}

export function createFileTracker(dir: string): Tracker {
  async function load(id: string): Promise<ParsedTask | undefined> {
    checkTaskId(id);
    let handle;
    try {
      handle = await open(join(dir, `${id}.md`), constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ELOOP") return undefined;
      throw new TrackerError("unreachable", `the task folder cannot be read (${code ?? "error"})`);
    }
    try {
      const stat = await handle.stat();
      if (!stat.isFile()) return undefined;
      if (stat.size > MAX_TASK_BYTES) throw new TrackerError("upstream", `task ${id} is larger than ${MAX_TASK_BYTES} bytes`);
      return parseTask(await handle.readFile("utf8"), id);
    } finally {
      await handle.close();
    }
  }

  async function must(id: string): Promise<ParsedTask> {
    const task = await load(id);
    if (task === undefined) throw new TrackerError("task", `there is no task '${id}' in this resource`);
    return task;
  }

  /** Atomically: a fresh file renamed over the old, so a reader never sees half a task. */
  async function rewrite(id: string, text: string, what: string): Promise<void> {
    const temp = join(dir, `.${id}.${randomUUID()}.tmp`);
    try {
      await writeFile(temp, text, { flag: "wx", mode: 0o600 });
      await rename(temp, join(dir, `${id}.md`));
    } catch (error) {
      await unlink(temp).catch(() => undefined);
      throw new TrackerError("upstream", `the ${what} could not be written (${(error as NodeJS.ErrnoException).code ?? "error"})`);
    }
  }

  return {
    async pull() {
      let names: string[];
      try {
        names = await readdir(dir);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        throw new TrackerError(
          "unreachable",
          code === "ENOENT"
            ? "the task resource's folder does not exist; the owner creates it (see docs/team-file.md, trackers)"
            : `the task folder cannot be read (${code ?? "error"})`,
        );
      }
      const out: TaskSummary[] = [];
      for (const name of names.sort()) {
        if (!name.endsWith(".md")) continue;
        const id = name.slice(0, -3);
        try {
          checkTaskId(id);
        } catch {
          continue;
        }
        const task = await load(id);
        if (task === undefined) continue;
        const s = summary(id, task);
        if (s.state !== "open") continue;
        out.push(s);
        if (out.length >= LIMITS.tasks) break;
      }
      return out;
    },
    async read(id) {
      const task = await must(id);
      return { ...summary(id, task), body: clip(task.body, LIMITS.body) };
    },
    async claim(id, claimant) {
      const task = await must(id);
      const holder = str(task.front["claimed-by"]);
      if (holder !== "" && holder !== claimant) throw new TrackerError("claimed", `task ${id} is already claimed by another seat`);
      if (holder === claimant) return summary(id, task);
      const front = { ...task.front, "claimed-by": claimant };
      await rewrite(id, `---\n${stringify(front).trimEnd()}\n---\n${task.body}`, "claim");
      return summary(id, { front, body: task.body });
    },
    async comment(id, body, as) {
      const task = await must(id);
      // Appended under a heading naming the account and the seat that asked; the rest of the file stays byte for byte.
      const text = `${(task.raw ?? task.body).replace(/\s*$/, "")}\n\n### Comment as ${as.account} (from ${as.seat})\n\n${body.replace(/\s*$/, "")}\n`;
      if (Buffer.byteLength(text) > MAX_TASK_BYTES)
        throw new TrackerError("upstream", `task ${id} would be larger than ${MAX_TASK_BYTES} bytes with the comment`);
      await rewrite(id, text, "comment");
      return summary(id, task);
    },
  };
}
