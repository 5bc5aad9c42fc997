/**
 * The file beside the CLI's bundled front (dist/bin/) that holds `teamd --help` as the command
 * tree prints it to a pipe: written by the build (scripts/build-shim.ts), read by the front
 * (daemon/main.ts). Its own module so the front and the build name it once without importing each other.
 */
export const HELP_TEXT_FILE = "teamd-help.txt";

/**
 * Beside it: the names (and aliases) of the tree's visible commands, one a line, as commander
 * offers them for "Did you mean": written by the build, read by the front for `teamd WORD`
 * when WORD is no command (daemon/main.ts).
 */
export const COMMAND_NAMES_FILE = "teamd-commands.txt";

/** Beside them: commander's own suggestSimilar (lib/suggestSimilar.js), copied there by the build, which the front requires by its own path. */
export const SUGGEST_FILE = "teamd-suggest.cjs";

/** What the tree prints after a usage error (commander's showHelpAfterError), and the front after an unknown command. */
export const HELP_AFTER_ERROR = "(run `teamd --help` for the list of commands)";
