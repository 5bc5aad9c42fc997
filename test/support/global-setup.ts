import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

/**
 * Integration tests run the real programs from dist/. Build first (tsc -b is incremental:
 * a no-op when dist/ is current), so `npx vitest` alone never tests stale output.
 */
export default function setup(): void {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  execFileSync(process.execPath, [`${root}node_modules/typescript/bin/tsc`, "-b"], { cwd: root, stdio: "inherit" });
}
