/**
 * What a tracker adapter answers and how it fails. The broker (§11) serves a seat only these
 * allowlisted, non-secret fields; an adapter maps its tracker's shape onto them and never
 * returns anything else. Errors carry a message teamd wrote — never a tracker's body, a
 * header or a credential — because they reach the seat and the ledger's outcome note.
 */
export interface TaskSummary {
  readonly id: string;
  readonly title: string;
  readonly state: string;
  readonly labels: readonly string[];
  /** The login of the assignee, or "" when none. */
  readonly assignee: string;
  readonly url: string;
  /** Whether a seat has claimed it through the broker. */
  readonly claimed: boolean;
}

export interface TaskDetail extends TaskSummary {
  readonly body: string;
}

export interface Tracker {
  /** The open tasks of the resource. */
  pull(): Promise<TaskSummary[]>;
  read(id: string): Promise<TaskDetail>;
  /** Mark the task claimed by `claimant` (`team/seat`); claiming a task one already holds is a no-op. */
  claim(id: string, claimant: string): Promise<TaskSummary>;
  /**
   * Add a comment to the task under the owner's account (act-as, §3): a tracker with an API
   * posts it with the account's token, never its own; the file tracker appends it to the task.
   */
  comment(id: string, body: string, as: CommentAuthor): Promise<TaskSummary>;
}

/** Who a comment is made as: the owner's account (and its credential), on behalf of a seat. */
export interface CommentAuthor {
  readonly account: string;
  readonly token: string;
  /** `team/seat`, for the file tracker's note of who asked. */
  readonly seat: string;
}

/**
 * - `task`: the task does not exist or its id is malformed (nothing happened);
 * - `claimed`: the task is claimed by another seat (nothing happened);
 * - `upstream`: the tracker answered with an error (nothing happened, as far as it said);
 * - `unreachable`: no answer (for a claim, it may or may not have happened).
 */
export type TrackerErrorKind = "task" | "claimed" | "upstream" | "unreachable";

export class TrackerError extends Error {
  constructor(
    readonly kind: TrackerErrorKind,
    message: string,
  ) {
    super(message);
    this.name = "TrackerError";
  }
}

/** Task ids are short tokens: a file name stem or an issue number; nothing that walks a path. */
export const TASK_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export function checkTaskId(id: string): void {
  if (!TASK_ID.test(id) || id.includes(".."))
    throw new TrackerError("task", `'${id.slice(0, 64)}' is not a task id (letters, digits, '.', '_' and '-', at most 128)`);
}

/** Bounds on what the broker hands back: a tracker that answers with megabytes is cut. */
export const LIMITS = Object.freeze({ comment: 32 * 1024, title: 512, body: 64 * 1024, label: 128, labels: 50, login: 128, url: 2048, tasks: 200 });

export function clip(value: unknown, max: number): string {
  const text = typeof value === "string" ? value : "";
  return text.length > max ? `${text.slice(0, max)}…[cut at ${max} characters]` : text;
}
