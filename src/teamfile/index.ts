/**
 * The team file (teamd.yaml): load it into the kernel's policy, and run kernel case files.
 */
export { type LoadFailure, type LoadOptions, type LoadResult, type LoadedPolicy, loadTeamFile, loadTeamFileData, loadTeamFileText } from "./load.js";
export { type TeamFileError, formatTeamFileErrors } from "./errors.js";
export { CREDENTIAL_SHAPES, credentialShape } from "./credentials.js";
export { sha256 } from "./hashes.js";
export { type CaseFile, type Expectation, type KernelCase, parseCaseFile } from "./case-format.js";
export { type CaseFileReport, type CaseOutcome, type CaseResult, runCase, runCaseFiles, runCaseText } from "./case-runner.js";
