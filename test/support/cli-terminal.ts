import * as pty from "node-pty";
import { TEAMD } from "./programs.js";
import type { TeamdHarness } from "./teamd-harness.js";

/**
 * The owner's CLI in a pty of its own (node-pty), as in a person's terminal: what it wrote,
 * keystrokes in, the window size, waiting for text, and a kill by its own pid.
 */
export interface Terminal {
  output(): string;
  write(data: string): void;
  resize(cols: number, rows: number): void;
  readonly exit: Promise<number>;
  waitFor(text: string | RegExp, timeoutMs?: number): Promise<void>;
  kill(): void;
}

/** The CLI in a pty of its own, as in a person's terminal. */
export function cliTerminal(h: Pick<TeamdHarness, "repo" | "env">, args: string[]): Terminal {
  const term = pty.spawn(process.execPath, [TEAMD, ...args], {
    cols: 100,
    rows: 30,
    cwd: h.repo,
    env: { ...process.env, ...h.env } as Record<string, string>,
  });
  let out = "";
  let exited = false;
  const waiters = new Set<() => void>();
  term.onData((d) => {
    out += d;
    for (const w of waiters) w();
  });
  const exit = new Promise<number>((resolve) =>
    term.onExit(({ exitCode }) => {
      exited = true;
      resolve(exitCode);
    }),
  );
  const t: Terminal = {
    output: () => out,
    write: (data) => term.write(data),
    resize: (cols, rows) => term.resize(cols, rows),
    exit,
    waitFor(text, timeoutMs = 10_000) {
      const seen = () => (typeof text === "string" ? out.includes(text) : text.test(out));
      if (seen()) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`not seen in ${timeoutMs} ms: ${String(text)}; output so far: ${JSON.stringify(out)}`));
        }, timeoutMs);
        const check = () => {
          if (!seen()) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
      });
    },
    // Our own client process, by its pid, only while it has not exited.
    kill: () => {
      if (!exited) process.kill(term.pid, "SIGKILL");
    },
  };
  return t;
}

/** Terminals a test opens, each killed (by its own pid) and awaited by closeAll, for an afterEach. */
export function cliTerminals(harness: () => Pick<TeamdHarness, "repo" | "env">): { open(args: string[]): Terminal; closeAll(): Promise<void> } {
  const open: Terminal[] = [];
  return {
    open(args) {
      const t = cliTerminal(harness(), args);
      open.push(t);
      return t;
    },
    async closeAll() {
      for (const t of open.splice(0)) {
        t.kill();
        await t.exit;
      }
    },
  };
}
