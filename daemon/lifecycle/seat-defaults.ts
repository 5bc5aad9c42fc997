/**
 * What a seat has by default (issue 22), beneath what the seat and its team file choose:
 *
 * - a git identity, so the first `git commit` in a seat works: the seat's name as author and
 *   committer, at an address under `.invalid` (RFC 2606: it can never reach anyone). Written
 *   as `user.name` and `user.email` into the fresh clone's own config at its first start (as
 *   its `teamd` remote is), never into its tree; so the seat's own `git config user.name` and
 *   the team file's `start.env` (`GIT_AUTHOR_NAME` and friends, which git puts above any
 *   config) both still win. Not through GIT_AUTHOR_* in every seat's environment: git puts
 *   those above `git -c` and the repository's config, so nothing in the seat could set its
 *   own identity. `EMAIL` (below every config) covers a clone made before this existed.
 * - TERM: the seat's command runs in a pty the daemon holds, shown to the owner through the
 *   attach filter; `xterm-256color` is what that path renders, whatever the daemon's own TERM
 *   (a service has none).
 */
export function seatGitIdentity(team: string, seat: string): { name: string; email: string } {
  return { name: `${seat} (teamd seat, team ${team})`, email: `${seat}@${team}.teamd.invalid` };
}

export function seatDefaultEnv(team: string, seat: string): Record<string, string> {
  return { EMAIL: seatGitIdentity(team, seat).email, TERM: "xterm-256color" };
}
