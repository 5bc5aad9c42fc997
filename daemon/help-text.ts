/**
 * The file beside the CLI's bundled front (dist/bin/) that holds `teamd --help` as the command
 * tree prints it to a pipe: written by the build (scripts/build-shim.ts), read by the front
 * (daemon/main.ts). Its own module so the front and the build name it once without importing each other.
 */
export const HELP_TEXT_FILE = "teamd-help.txt";
