import { credentialShape } from "../teamfile/credentials.js";
import type { TaskDetail, TaskSummary } from "./tracker.js";

/**
 * The broker's refusal to return any field carrying its credential (§11), enforced on every
 * value it serves: a value equal to or containing the credential — raw, base64, base64url,
 * hex (either case) or URL-encoded, at any byte alignment — is replaced by a marker naming
 * why, and so is a value with a known key shape (the team-file check's shapes,
 * src/teamfile/credentials.ts: a few known shapes, not a detector). The marker never quotes
 * the value.
 */
export const SCRUBBED_CREDENTIAL = "[scrubbed by teamd: carries the tracker's credential]";
export const scrubbedShape = (name: string) => `[scrubbed by teamd: looks like a ${name}]`;

/** Below this many bytes a "credential" would match ordinary text; config refuses shorter ones. */
export const MIN_SECRET_BYTES = 8;

/**
 * Every form the secret may take inside a larger text, lowercased for a case-blind match (hex
 * and percent-encoding are case-blind; base64 is not, so it is matched separately).
 */
export interface SecretForms {
  /** Case-blind needles: raw, hex, URL-encoded. */
  readonly folded: readonly string[];
  /** Case-exact needles: the base64 and base64url cores at each of the three alignments. */
  readonly exact: readonly string[];
}

/**
 * The base64 characters fully determined by the secret's bytes when it starts `k` bytes into
 * a 3-byte group: the text between the group it shares with what precedes it and the group it
 * shares with what follows. Any base64 of a text containing the secret at that alignment
 * contains this core, whatever surrounds it.
 */
function base64Cores(secret: Buffer): string[] {
  const cores: string[] = [];
  for (let k = 0; k < 3; k++) {
    const shifted = Buffer.concat([Buffer.alloc(k), secret]).toString("base64");
    const start = k === 0 ? 0 : 4;
    const end = 4 * Math.floor((k + secret.length) / 3);
    if (end - start >= 8) cores.push(shifted.slice(start, end));
  }
  return cores;
}

export function secretForms(secrets: readonly string[]): SecretForms {
  const folded = new Set<string>();
  const exact = new Set<string>();
  for (const secret of secrets) {
    if (Buffer.byteLength(secret) < MIN_SECRET_BYTES) continue;
    const bytes = Buffer.from(secret, "utf8");
    folded.add(secret.toLowerCase());
    folded.add(bytes.toString("hex"));
    folded.add(encodeURIComponent(secret).toLowerCase());
    for (const core of base64Cores(bytes)) {
      exact.add(core);
      exact.add(core.replace(/\+/g, "-").replace(/\//g, "_"));
    }
  }
  return { folded: [...folded], exact: [...exact] };
}

/** Why a value may not be served, or undefined when it may. */
export function scrubReason(value: string, forms: SecretForms): string | undefined {
  if (value === "") return undefined;
  const lower = value.toLowerCase();
  // Percent-decoding catches a form split by encoding only some characters (e.g. %67hp_…).
  let decoded = lower;
  try {
    decoded = decodeURIComponent(value).toLowerCase();
  } catch {
    // not percent-encoded text: the raw form is checked
  }
  if (forms.folded.some((n) => lower.includes(n) || decoded.includes(n))) return SCRUBBED_CREDENTIAL;
  if (forms.exact.some((n) => value.includes(n))) return SCRUBBED_CREDENTIAL;
  const shape = credentialShape(value, () => false);
  return shape === undefined ? undefined : scrubbedShape(shape.name);
}

export const scrubValue = (value: string, forms: SecretForms): string => scrubReason(value, forms) ?? value;

/** A task summary with only its allowlisted fields, each scrubbed. */
export function scrubSummary(task: TaskSummary, forms: SecretForms): TaskSummary {
  return {
    id: scrubValue(task.id, forms),
    title: scrubValue(task.title, forms),
    state: scrubValue(task.state, forms),
    labels: task.labels.map((l) => scrubValue(l, forms)),
    assignee: scrubValue(task.assignee, forms),
    url: scrubValue(task.url, forms),
    claimed: task.claimed === true,
  };
}

/**
 * A task's body is served line by line: one line carrying the credential is replaced, the rest
 * of the task stays readable. A line is the unit because a credential never spans one.
 */
export function scrubDetail(task: TaskDetail, forms: SecretForms): TaskDetail {
  const body = task.body
    .split("\n")
    .map((line) => scrubValue(line, forms))
    .join("\n");
  // Then the whole of what is left: a base64 blob wrapped across lines still carries it.
  const joined = scrubReason(body.replace(/\s+/g, ""), forms) === SCRUBBED_CREDENTIAL;
  return { ...scrubSummary(task, forms), body: joined ? SCRUBBED_CREDENTIAL : body };
}
