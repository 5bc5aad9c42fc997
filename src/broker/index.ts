export * from "./broker.js";
export * from "./config.js";
export * from "./scrub.js";
export * from "./tracker.js";
export { createFileTracker } from "./file-tracker.js";
export { createGithubTracker, type GithubDeps } from "./github-tracker.js";
export * from "./accounts.js";
