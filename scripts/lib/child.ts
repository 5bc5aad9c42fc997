import { spawn, type ChildProcess } from "node:child_process";

/** Start a node program and wait until its stdout contains `marker`; bounded by a deadline. */
export function startChild(args: string[], env: NodeJS.ProcessEnv, marker: string, timeoutMs = 15_000): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stderr?.setEncoding("utf8").on("data", (d: string) => (err = (err + d).slice(-4000)));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${args.join(" ")} not ready in ${timeoutMs} ms; stderr: ${err}`));
    }, timeoutMs);
    child.stdout?.setEncoding("utf8").on("data", (d: string) => {
      out += d;
      if (out.includes(marker)) {
        clearTimeout(timer);
        resolve(child);
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${args.join(" ")} exited with ${code} before ready; stderr: ${err}`));
    });
  });
}

/** SIGTERM the child by pid and wait for it to exit (SIGKILL after 5 s). */
export function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const killer = setTimeout(() => child.kill("SIGKILL"), 5000);
    child.once("exit", () => {
      clearTimeout(killer);
      resolve();
    });
    child.kill("SIGTERM");
  });
}
