/**
 * The one name a seat's pack file may have in its tmp folder (seat-pack-file.ts): the daemon
 * opens nothing else there. Its own module, with no imports, because the shim's remote helper
 * names the file it writes by it.
 */
export const PACK_FILE_NAME = /^\.teamd-pack-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.pack$/;

/** The name of a pack file, for a UUID. */
export function packFileName(uuid: string): string {
  return `.teamd-pack-${uuid}.pack`;
}
