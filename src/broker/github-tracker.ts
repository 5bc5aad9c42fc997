import type { GithubTrackerConfig } from "./config.js";
import { LIMITS, TrackerError, checkTaskId, clip, type TaskDetail, type TaskSummary, type Tracker } from "./tracker.js";

/**
 * GitHub Issues over REST, performed by the daemon: the token goes only into the
 * Authorization header of requests to the configured API base (https, or http to a loopback
 * host — where the tests' fake GitHub listens). Answers are read with a deadline and a size
 * bound, mapped onto the broker's allowlisted fields, and never echoed in an error: an error
 * names the status only, because a tracker's error body may quote the request.
 */
const DEADLINE_MS = 10_000;
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

export interface GithubDeps {
  /** Injected for tests; the daemon uses the global fetch (undici: no proxy variables honoured). */
  readonly fetch?: typeof fetch;
  readonly deadlineMs?: number;
}

interface Issue {
  number?: unknown;
  title?: unknown;
  body?: unknown;
  state?: unknown;
  labels?: unknown;
  assignee?: unknown;
  html_url?: unknown;
  pull_request?: unknown;
}

const str = (v: unknown): string => (typeof v === "string" ? v : "");

function labelNames(raw: unknown): string[] {
  if (!Array.isArray(raw)) return [];
  return raw
    .slice(0, LIMITS.labels)
    .map((l) => clip(typeof l === "string" ? l : typeof l === "object" && l !== null ? str((l as { name?: unknown }).name) : "", LIMITS.label))
    .filter((l) => l !== "");
}

export function createGithubTracker(config: GithubTrackerConfig, deps: GithubDeps = {}): Tracker {
  const doFetch = deps.fetch ?? fetch;
  const base = `${config.api}/repos/${encodeURIComponent(config.owner)}/${encodeURIComponent(config.repo)}`;

  async function call(method: "GET" | "POST", path: string, body?: unknown, token: string = config.token): Promise<unknown> {
    let response: Response;
    try {
      response = await doFetch(`${base}${path}`, {
        method,
        redirect: "error",
        headers: {
          accept: "application/vnd.github+json",
          authorization: `Bearer ${token}`,
          "x-github-api-version": "2022-11-28",
          "user-agent": "teamd-broker",
          ...(body !== undefined ? { "content-type": "application/json" } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(deps.deadlineMs ?? DEADLINE_MS),
      });
    } catch {
      // The cause may carry the URL or a header; it is not repeated.
      throw new TrackerError(
        "unreachable",
        `GitHub (${new URL(config.api).host}) did not answer within ${Math.round((deps.deadlineMs ?? DEADLINE_MS) / 1000)} s`,
      );
    }
    const text = await readBounded(response);
    if (response.status === 404)
      throw new TrackerError(
        "task",
        `GitHub answered 404 for ${method === "GET" ? "the request" : "the claim"}: no such issue in ${config.owner}/${config.repo}, or the token cannot see it`,
      );
    if (!response.ok)
      throw new TrackerError(
        "upstream",
        `GitHub answered ${response.status}${response.status === 401 || response.status === 403 ? ": the owner checks the tracker's token and its permissions" : ""}`,
      );
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new TrackerError("upstream", "GitHub's answer is not JSON");
    }
  }

  async function readBounded(response: Response): Promise<string> {
    const declared = Number(response.headers.get("content-length") ?? "0");
    if (declared > MAX_ANSWER_BYTES) {
      await response.body?.cancel().catch(() => undefined);
      throw new TrackerError("upstream", `GitHub's answer is larger than ${MAX_ANSWER_BYTES} bytes`);
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    if (response.body === null) return "";
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        size += chunk.byteLength;
        if (size > MAX_ANSWER_BYTES) throw new TrackerError("upstream", `GitHub's answer is larger than ${MAX_ANSWER_BYTES} bytes`);
        chunks.push(chunk);
      }
    } catch (error) {
      if (error instanceof TrackerError) throw error;
      throw new TrackerError("unreachable", "GitHub's answer was cut off");
    }
    return Buffer.concat(chunks).toString("utf8");
  }

  function summary(issue: Issue): TaskSummary {
    const labels = labelNames(issue.labels);
    const assignee = typeof issue.assignee === "object" && issue.assignee !== null ? str((issue.assignee as { login?: unknown }).login) : "";
    return {
      id: typeof issue.number === "number" ? String(issue.number) : "",
      title: clip(issue.title, LIMITS.title),
      state: clip(issue.state, 32),
      labels,
      assignee: clip(assignee, LIMITS.login),
      url: clip(issue.html_url, LIMITS.url),
      claimed: labels.includes(config.claimLabel),
    };
  }

  const issueNumber = (id: string): string => {
    checkTaskId(id);
    if (!/^[1-9][0-9]{0,9}$/.test(id)) throw new TrackerError("task", `'${id}' is not a GitHub issue number`);
    return id;
  };

  async function readIssue(id: string): Promise<Issue> {
    const issue = (await call("GET", `/issues/${issueNumber(id)}`)) as Issue;
    if (typeof issue !== "object" || issue === null || typeof issue.number !== "number") throw new TrackerError("upstream", "GitHub's answer is not an issue");
    if (issue.pull_request !== undefined) throw new TrackerError("task", `#${id} is a pull request, not an issue`);
    return issue;
  }

  return {
    async pull() {
      const list = await call("GET", `/issues?state=open&per_page=100`);
      if (!Array.isArray(list)) throw new TrackerError("upstream", "GitHub's answer is not a list of issues");
      return (list as Issue[])
        .filter((i) => typeof i === "object" && i !== null && i.pull_request === undefined && typeof i.number === "number")
        .slice(0, LIMITS.tasks)
        .map(summary);
    },
    async read(id) {
      const issue = await readIssue(id);
      return { ...summary(issue), body: clip(issue.body, LIMITS.body) } satisfies TaskDetail;
    },
    async claim(id, claimant) {
      const issue = await readIssue(id);
      const seatLabel = `${config.claimLabel}:${claimant}`;
      const labels = labelNames(issue.labels);
      if (labels.includes(seatLabel)) return summary(issue);
      if (labels.includes(config.claimLabel)) throw new TrackerError("claimed", `#${id} is already claimed by another seat`);
      await call("POST", `/issues/${id}/labels`, { labels: [config.claimLabel, seatLabel] });
      if (config.assignee !== "") await call("POST", `/issues/${id}/assignees`, { assignees: [config.assignee] });
      return summary(await readIssue(id));
    },
    async comment(id, body, as) {
      const issue = await readIssue(id);
      // Posted with the account's token: the comment is the owner's speech under that account (§3).
      await call("POST", `/issues/${issueNumber(id)}/comments`, { body }, as.token);
      return summary(issue);
    },
  };
}
