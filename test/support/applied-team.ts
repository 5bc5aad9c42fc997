import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeTempHome, run, startDaemon, TEAMD, type DaemonProcess } from "./programs.js";
import { makeRepo } from "./repo.js";

export interface AppliedTeam {
  readonly tmp: { dir: string; remove(): Promise<void> };
  readonly repo: string;
  readonly home: string;
  readonly env: NodeJS.ProcessEnv;
  readonly daemon: DaemonProcess;
}

/**
 * What most integration tests start from: a temporary home and repository, a real daemon,
 * `teamd init`, the given team file written and applied. As root the temporary folder is
 * opened to traversal (0711): in system mode the seat user must reach its folders under it.
 * Throws naming the step that failed.
 */
export async function appliedTeam(prefix: string, teamFile: string, files?: Record<string, string>): Promise<AppliedTeam> {
  const tmp = await makeTempHome(prefix);
  if (process.getuid?.() === 0) chmodSync(tmp.dir, 0o711);
  const repo = makeRepo(tmp.dir, "proj", files);
  const home = join(tmp.dir, "home");
  const env = { TEAMD_HOME: home, TEAMD_OWNER_KEY: join(tmp.dir, "keys/owner.key"), HOME: tmp.dir };
  const daemon = await startDaemon(home, [], 15_000, { HOME: tmp.dir });
  const step = async (args: string[]) => {
    const r = await run(TEAMD, args, env, 60_000, { cwd: repo });
    if (r.code !== 0) throw new Error(`teamd ${args.join(" ")} exited ${String(r.code)}: ${r.stderr}`);
  };
  try {
    await step(["init", "--yes", "--json"]);
    writeFileSync(join(repo, "teamd.yaml"), teamFile);
    await step(["apply", "--yes"]);
  } catch (error) {
    await daemon.stop();
    await tmp.remove();
    throw error;
  }
  return { tmp, repo, home, env, daemon };
}
