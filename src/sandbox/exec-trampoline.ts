import { BASH, BASH_COMMAND } from "./close-fds.js";

/**
 * What runs in a ready exec's sandbox (daemon/lifecycle/ready-exec.ts) until its command is
 * known: bash, already inside the seat's containment (its namespaces, mounts, seccomp filter,
 * cgroups and limits), reading the command from the control pipe the launcher gave it on
 * `fd`, then exec'ing it as bubblewrap would have. Pure: returns the argv inside the seat.
 *
 * As bubblewrap would have, to the letter, so that a command sees no difference:
 * - the environment is the one bubblewrap gave bash, in its order, read back from
 *   /proc/self/environ and handed to `env -i`: bash's own exec would add SHLVL and reorder
 *   what it exports. `env` then looks the command up with execvp, as bwrap does (the seat's
 *   PATH, /bin/sh for a script without a `#!`);
 * - no fd but the three streams: bash closes the control pipe before it execs;
 * - a command that is not there, or not executable, is not run: bash looks it up first, as
 *   execvp does, prints what bwrap prints ("bwrap: execvp NAME: No such file or directory",
 *   or "Permission denied"), and says which on the control pipe (N or P), so the exec ends as
 *   a failed setup with bwrap's words, not as the exit of a command.
 *
 * A command whose name holds `=` would be read by `env` as a variable: such an exec never
 * takes a ready sandbox (commandFitsTrampoline). Nor does one with a NUL byte, which no argv
 * can carry.
 */
export function trampolineCommand(fd: number): string[] {
  const script = [
    `a=()`,
    `while IFS= read -r -d '' -u ${fd} x; do a+=("$x"); done`,
    // Closed without a command: the daemon let it go.
    `[ \${#a[@]} -gt 0 ] || exit 0`,
    `n=\${a[0]} f= e=N`,
    `case $n in`,
    `  */*) if [ -e "$n" ]; then if [ -f "$n" ] && [ -x "$n" ]; then f=$n; else e=P; fi; fi ;;`,
    `  ?*) p=$PATH:`,
    `    while [ -n "$p" ]; do d=\${p%%:*}; p=\${p#*:}; [ -n "$d" ] || d=.`,
    `      if [ -e "$d/$n" ]; then if [ -f "$d/$n" ] && [ -x "$d/$n" ]; then f=$d/$n; break; fi; e=P; fi`,
    `    done ;;`,
    `esac`,
    `if [ -n "$f" ]; then`,
    `  mapfile -d '' -t v < /proc/self/environ`,
    `  exec ${fd}<&-`,
    `  exec /usr/bin/env -i -- "\${v[@]}" "\${a[@]}"`,
    `fi`,
    `[ $e = N ] && m="No such file or directory" || m="Permission denied"`,
    `printf 'bwrap: execvp %s: %s\\n' "$n" "$m" >&2`,
    `printf '%s' $e >&${fd}`,
    `exit 1`,
  ].join("\n");
  return [BASH, ...BASH_COMMAND, script, "teamd-exec"];
}

/** Whether `command` can go through the trampoline: env would take a first word with `=` for a variable. */
export function commandFitsTrampoline(command: readonly string[]): boolean {
  const first = command[0];
  return first !== undefined && first !== "" && !first.includes("=") && command.every((arg) => !arg.includes("\0"));
}

/** The command as the trampoline reads it: each word NUL-terminated. */
export function encodeCommand(command: readonly string[]): Buffer {
  return Buffer.concat(command.map((arg) => Buffer.from(`${arg}\0`, "utf8")));
}

/** What the trampoline said on the control pipe: the execvp error bwrap would have printed, or undefined (it exec'd). */
export function trampolineFailure(said: string): "No such file or directory" | "Permission denied" | undefined {
  if (said.startsWith("N")) return "No such file or directory";
  if (said.startsWith("P")) return "Permission denied";
  return undefined;
}
