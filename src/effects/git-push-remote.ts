import { spawn } from "node:child_process";
import { HARDENING, gitEnv } from "./git.js";

/**
 * A publish (§3 act-as): push one commit of the hub to the owner's remote, under the owner's
 * account, performed by the daemon. The credential reaches git only through its environment
 * (`GIT_CONFIG_COUNT` with `http.extraHeader`), never its argv (which any user of the machine
 * may read in /proc), never a file, never a record; the caller scrubs what git prints before
 * anything is shown.
 *
 * git runs hardened (src/effects/git.ts: no system or global config, no hooks, no credential
 * helper, no askpass, no prompt) and further: only the https transport (http when the owner's
 * remote is a loopback URL, the tests' server), no redirect (the header would follow it to
 * another host), `--no-verify`, one refspec `<commit>:refs/heads/<branch>`, never forced — a
 * remote branch that moved elsewhere rejects the push rather than losing its commits.
 */
export interface RemotePush {
  readonly hub: string;
  readonly commit: string;
  /** The owner's remote, checked by the kernel: https, or http to a loopback host. */
  readonly url: string;
  readonly branch: string;
  readonly username: string;
  readonly token: string;
  readonly timeoutMs: number;
}

export type RemotePushResult =
  /** The remote's branch now holds the commit (`status` is git's flag: updated, created, already there). */
  | { readonly kind: "done"; readonly status: "updated" | "created" | "up-to-date"; readonly stderr: string }
  /** Nothing changed on the remote: it rejected the update, refused the credential, or was never reached. */
  | { readonly kind: "refused"; readonly why: string; readonly stderr: string }
  /** git died mid-way or at its deadline, or failed in a way that does not say whether the ref moved. */
  | { readonly kind: "unknown"; readonly why: string; readonly stderr: string };

const STDERR_BYTES = 16 * 1024;

/** git's messages for failures before any ref could move: discovery refused or never answered. */
const BEFORE_ANY_UPDATE = [
  /Authentication failed/i,
  /could not read (?:Username|Password)/i,
  /terminal prompts disabled/i,
  /The requested URL returned error: 4\d\d/i,
  /Failed to connect/i,
  /Could not resolve host/i,
  /Connection refused/i,
  /repository '.*' not found/i,
  /transport '.*' not allowed/i,
];

/** The environment-only config: the one secret header. The count form is read by git ≥ 2.31. */
function credentialEnv(username: string, token: string): Record<string, string> {
  const basic = Buffer.from(`${username}:${token}`, "utf8").toString("base64");
  return { GIT_CONFIG_COUNT: "1", GIT_CONFIG_KEY_0: "http.extraHeader", GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}` };
}

export function pushToRemote(push: RemotePush): Promise<RemotePushResult> {
  const loopbackHttp = push.url.startsWith("http://");
  const args = [
    ...HARDENING,
    "-c",
    "protocol.allow=never",
    "-c",
    "protocol.https.allow=always",
    "-c",
    `protocol.http.allow=${loopbackHttp ? "always" : "never"}`,
    "-c",
    "http.followRedirects=false",
    "-c",
    "push.gpgSign=false",
    "-c",
    "push.recurseSubmodules=no",
    "--git-dir",
    push.hub,
    "push",
    "--porcelain",
    "--no-verify",
    "--no-signed",
    push.url,
    `${push.commit}:refs/heads/${push.branch}`,
  ];
  return new Promise((resolve) => {
    const child = spawn("git", args, { env: gitEnv(credentialEnv(push.username, push.token)), stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (s: string) => {
      if (stdout.length < STDERR_BYTES) stdout += s;
    });
    child.stderr.setEncoding("utf8").on("data", (s: string) => {
      stderr = (stderr + s).slice(-STDERR_BYTES);
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, push.timeoutMs);
    child.once("error", (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve({ kind: "refused", why: `git could not be started (${error.code ?? "error"}); nothing was pushed`, stderr: "" });
    });
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      if (code === null) {
        resolve({
          kind: "unknown",
          why: timedOut ? `the push was killed at its ${Math.round(push.timeoutMs / 1000)} s deadline` : `the push was killed by ${signal ?? "a signal"}`,
          stderr,
        });
        return;
      }
      // --porcelain: one line per ref, `<flag>\t<from>:<to>\t<summary>`.
      const line = stdout.split("\n").find((l) => /^[ +\-*!=]\t/.test(l));
      const flag = line?.[0];
      const summary = line?.split("\t")[2]?.trim() ?? "";
      if (code === 0 && (flag === " " || flag === "*" || flag === "=")) {
        resolve({ kind: "done", status: flag === "*" ? "created" : flag === "=" ? "up-to-date" : "updated", stderr });
      } else if (flag === "!") {
        resolve({ kind: "refused", why: `the remote rejected the update of ${push.branch}: ${summary.replace(/\s+/g, " ").slice(0, 200)}`, stderr });
      } else if (code !== 0 && line === undefined && BEFORE_ANY_UPDATE.some((p) => p.test(stderr))) {
        resolve({
          kind: "refused",
          why: `the remote refused the push before any update (exit ${code}: the account's credential refused, or the remote unreachable)`,
          stderr,
        });
      } else {
        resolve({ kind: "unknown", why: `git push exited ${code} without saying whether ${push.branch} moved`, stderr });
      }
    });
  });
}
