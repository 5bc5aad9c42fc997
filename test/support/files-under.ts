import { lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";

/**
 * Every regular file below `dir`, depth first in directory order; links are not followed.
 * The canary tests search these bytes for what must never be written down.
 */
export function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const stat = lstatSync(path);
    if (stat.isDirectory()) out.push(...filesUnder(path));
    else if (stat.isFile()) out.push(path);
  }
  return out;
}
