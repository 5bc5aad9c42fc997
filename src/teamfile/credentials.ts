import { createHash } from "node:crypto";

/**
 * The key-shape refusal (§11): teamd does not ask for, store or print the labs' keys, so a
 * team file carrying a value with a known credential shape is refused. It is a few known
 * shapes, not a detector — a key in an unknown format passes, and the docs say so. A value
 * that is a path to a real existing directory is exempt (a directory named like a key is not
 * a credential); a file path is not, because a key file's name can be the key.
 */
export interface CredentialShape {
  readonly name: string;
  /** How the shape starts, shown instead of the value: a refusal never echoes a secret. */
  readonly looksLike: string;
  readonly pattern: RegExp;
}

/** Order matters only for the name reported: the more specific shape comes first. */
export const CREDENTIAL_SHAPES: readonly CredentialShape[] = Object.freeze([
  { name: "Anthropic API key", looksLike: "sk-ant-…", pattern: /sk-ant-[A-Za-z0-9_-]{16,}/ },
  { name: "OpenAI-style secret key", looksLike: "sk-…", pattern: /(?<![A-Za-z0-9])sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}/ },
  { name: "GitHub token", looksLike: "ghp_… / gho_… / ghs_…", pattern: /(?<![A-Za-z0-9])gh[pousr]_[A-Za-z0-9]{30,}/ },
  { name: "GitHub fine-grained token", looksLike: "github_pat_…", pattern: /github_pat_[A-Za-z0-9_]{20,}/ },
  { name: "AWS access key id", looksLike: "AKIA…", pattern: /(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])/ },
  { name: "Slack token", looksLike: "xoxb-… / xoxp-…", pattern: /(?<![A-Za-z0-9])xox[bpars]-[A-Za-z0-9-]{10,}/ },
  { name: "Google API key", looksLike: "AIza…", pattern: /(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{35}/ },
  { name: "PEM private key", looksLike: "-----BEGIN … PRIVATE KEY-----", pattern: /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----/ },
]);

/** The first known credential shape a value carries, or undefined. */
export function credentialShape(value: string, isDirectory: (value: string) => boolean): CredentialShape | undefined {
  const shape = CREDENTIAL_SHAPES.find((s) => s.pattern.test(value));
  if (shape === undefined) return undefined;
  return isDirectory(value) ? undefined : shape;
}

/**
 * `text` with every value of a known credential shape replaced by its shape, length and a
 * short hash — for what an owner types that reaches a record (an exec's argv: an owner may pass
 * a key to log an agent in, so it is redacted, not refused). The shapes match inside a string,
 * so a key in `--flag=KEY`, `NAME=KEY` or a shell line is found as well as a whole argument.
 */
export function redactCredentials(text: string): string {
  let out = text;
  for (const shape of CREDENTIAL_SHAPES) {
    out = out.replace(new RegExp(shape.pattern.source, "g"), (value) => {
      const hash = createHash("sha256").update(value).digest("hex").slice(0, 12);
      return `[redacted ${shape.name}: ${value.length} chars, sha256 ${hash}]`;
    });
  }
  return out;
}
