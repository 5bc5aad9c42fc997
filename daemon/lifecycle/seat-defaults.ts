/**
 * What a seat's environment holds by default, beneath what its team file declares (`start.env`
 * wins over every name here; issue 22):
 *
 * - a git identity, so the first `git commit` in a seat works: the seat's name as author and
 *   committer, at an address under `.invalid` (RFC 2606: it can never reach anyone), through
 *   the environment rather than a write into the seat's tree or home;
 * - TERM: the seat's command runs in a pty the daemon holds, shown to the owner through the
 *   attach filter; `xterm-256color` is what that path renders, whatever the daemon's own TERM
 *   (a service has none).
 */
export function seatDefaultEnv(team: string, seat: string): Record<string, string> {
  const name = `${seat} (teamd seat, team ${team})`;
  const email = `${seat}@${team}.teamd.invalid`;
  return {
    GIT_AUTHOR_NAME: name,
    GIT_AUTHOR_EMAIL: email,
    GIT_COMMITTER_NAME: name,
    GIT_COMMITTER_EMAIL: email,
    TERM: "xterm-256color",
  };
}
