import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    // Integration tests start real daemons and real processes; give them room on a
    // 2-core machine, but keep every test bounded.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // Files run side by side (vitest's default here would be one at a time: cores - 1): most of a
    // file's time is spent waiting on daemons, seats and git, not on a core. Nothing a file
    // uses is shared with another: each has its own TEAMD_HOME, hub and daemon; seat cgroups
    // are named by their home (daemon/lifecycle/cgroup.ts); system-mode seat uids are claimed
    // machine-wide with O_EXCL (daemon/host/seat-uids.ts); servers listen on port 0, and the
    // fixed ports a seat uses are on its own loopback. Measured on 2 cores: 970 s at 2 workers,
    // 1,803 s at 1.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    reporters: ["default"],
  },
});
