/**
 * Poll `check` until it holds or `ms` pass; resolves with whether it held (the caller
 * asserts, so a failure names what it waited for). Tests wait for processes and files this
 * way, never with fixed sleeps.
 */
export async function waitFor(check: () => boolean | Promise<boolean>, ms: number, pollMs = 50): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, pollMs));
  }
  return check();
}
