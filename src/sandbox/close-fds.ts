/**
 * Close every fd above `keep` before the sandbox starts. bwrap passes whatever fds it
 * inherits into the seat, and Node's spawn (libuv) and forkpty close only their own
 * (close-on-exec) fds: a descriptor the daemon inherited without close-on-exec (from the
 * shell or service manager that started it — a pipe, a log file, a socket) would reach every
 * seat. Measured: a seat saw the write end of a pipe its daemon's parent shell held.
 *
 * Node cannot close fds it did not open, so the first program of the launch chain does it:
 * bash (dash cannot name an fd above 9), which lists its own fds in /proc and closes each one
 * above `keep` that is still open (the glob's own directory fd is gone by then), then execs
 * the rest of the chain. Pure: returns the argv prefix; `"$@"` is the chain.
 */
export const BASH = "/bin/bash";

/**
 * How every launch chain runs bash: `bash --norc --noprofile -c SCRIPT NAME ARGS...`. Without
 * --norc a bash whose stdin is a socket — and Node gives a child's stdin as a socketpair —
 * takes itself for a remote shell and runs the daemon user's ~/.bashrc (Debian's bash does):
 * before containment, with every fd still open, its output ahead of git's pack on stdout.
 * Found measuring contained git (issue 26): ~1.3 ms and a `pyenv: command not found` a run.
 */
export const BASH_COMMAND: readonly string[] = Object.freeze(["--norc", "--noprofile", "-c"]);

export function closeFdsScript(keep: number, then = 'exec "$@"'): string {
  return `for f in /proc/self/fd/*; do n=\${f##*/}; if [ "$n" -gt ${keep} ] && [ -e "$f" ]; then exec {n}>&-; fi; done; ${then}`;
}
