import { describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { EGRESS_BUNDLE_RELATIVE } from "../../scripts/build-shim.js";

/**
 * The egress launcher (shim/egress.ts, the built bundle a seat with egress runs every command
 * under): the command starts only once the proxy listens on 127.0.0.1:3128, so a client the
 * command starts at once connects. Node binds even a numeric address a tick after listen(), and
 * the launcher spawned the command at once: a clean-clone run's `curl` was refused "after 0 ms"
 * under load. TEAMD_TEST_EGRESS_LISTEN_DELAY_MS puts the bind off, which makes that race certain:
 * spawned at once, the command below is refused every time. Each run is in a network namespace
 * of its own (bwrap --unshare-net), where nothing else holds the port.
 */
const bundle = fileURLToPath(new URL(`../../${EGRESS_BUNDLE_RELATIVE}`, import.meta.url));

function connectFirstThing(delayMs: number): string {
  return execFileSync(
    "bwrap",
    [
      // The host's tree read-only as it is (the bundle may live under /tmp: a clean clone's did).
      ...["--unshare-net", "--unshare-pid", "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"],
      ...["--setenv", "TEAMD_TEST_EGRESS_LISTEN_DELAY_MS", String(delayMs), "--setenv", "TEAMD_EGRESS_SOCKET", "/nonexistent/teamd-egress.sock"],
      process.execPath,
      bundle,
      "--",
      "bash",
      "-c",
      "exec 3<>/dev/tcp/127.0.0.1/3128 && echo connected || echo refused",
    ],
    { encoding: "utf8", timeout: 20_000, stdio: ["ignore", "pipe", "pipe"] },
  ).trim();
}

describe.runIf(process.platform === "linux")("the egress launcher", () => {
  it("starts the command once the proxy listens: a connection it makes at once gets through, the bind put off 400 ms or not", () => {
    expect(connectFirstThing(400)).toBe("connected");
    for (let i = 0; i < 3; i++) expect(connectFirstThing(0)).toBe("connected");
  });
});
