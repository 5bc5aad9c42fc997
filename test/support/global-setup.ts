import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { makeQuietRoot } from "./quiet-dir.js";

/**
 * Integration tests run the real programs from dist/. Build first (tsc -b is incremental, then the shim bundle:
 * a no-op when dist/ is current), so `npx vitest` alone never tests stale output.
 */
export default function setup(): () => void {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  execFileSync(process.execPath, [`${root}node_modules/typescript/bin/tsc`, "-b"], { cwd: root, stdio: "inherit" });
  // The shim bundle seats bind (scripts/build-shim.ts), as `npm run build` makes it.
  execFileSync(process.execPath, [`${root}dist/scripts/build-shim.js`], { cwd: root, stdio: "inherit" });
  // Folders no other test file changes, for tests keyed by folders' change times (quiet-dir.ts).
  return makeQuietRoot();
}
