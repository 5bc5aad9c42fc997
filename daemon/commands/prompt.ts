import { UsageError } from "../../src/rpc/errors.js";
import { createInterface } from "node:readline";
import { readFileSync } from "node:fs";

/**
 * Ask on the terminal. Owner acts that need a person (a passphrase, a confirmation) ask
 * here and only here; without a terminal they fail with the flag or file that replaces
 * the question, never a silent default.
 */
export function isInteractive(): boolean {
  return Boolean(process.stdin.isTTY && process.stderr.isTTY);
}

/** Read a secret without echo. */
export function askSecret(question: string): Promise<string> {
  if (!isInteractive())
    return Promise.reject(new Error("a passphrase is needed and there is no terminal: set TEAMD_OWNER_PASSPHRASE_FILE to a file holding it"));
  return new Promise((resolve) => {
    const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
    const mutable = rl as unknown as { _writeToOutput: (s: string) => void };
    process.stderr.write(question);
    mutable._writeToOutput = () => undefined;
    rl.question("", (answer) => {
      rl.close();
      process.stderr.write("\n");
      resolve(answer);
    });
  });
}

export async function askYesNo(question: string): Promise<boolean> {
  if (!isInteractive()) throw new UsageError("a confirmation is needed and there is no terminal: pass --yes");
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  const answer = await new Promise<string>((resolve) => rl.question(`${question} [y/N] `, resolve));
  rl.close();
  return /^y(es)?$/i.test(answer.trim());
}

/** The passphrase for an encrypted owner key: from TEAMD_OWNER_PASSPHRASE_FILE, else asked. */
export async function ownerPassphrase(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  if (env.TEAMD_OWNER_PASSPHRASE_FILE) return readFileSync(env.TEAMD_OWNER_PASSPHRASE_FILE, "utf8").replace(/\r?\n$/, "");
  return askSecret("owner key passphrase: ");
}
