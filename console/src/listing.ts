/**
 * Directory listings for the file browser. The gateway has no list call, so the console runs
 * `find` through exec (the folder passed in an environment variable, never spliced into the
 * command) and parses its NUL-separated lines here. The output comes from the sandbox: it is
 * bounded (LISTING_MAX_ENTRIES by `head -z`, the exec output cap) and parsed defensively.
 */

/** Most entries listed per folder. */
export const LISTING_MAX_ENTRIES = 1000;

/** The command that lists $SBX_DIR (relative to the workspace): `type \t size \t name \0` per entry. */
export const LISTING_COMMAND = `cd -- "\${SBX_DIR:-.}" && find . -mindepth 1 -maxdepth 1 -printf '%y\\t%s\\t%f\\0' | head -z -n ${LISTING_MAX_ENTRIES}`;

/** One entry of a folder. */
export interface Entry {
  name: string;
  /** d: folder, f: file, l: symbolic link, other find %y letters as they are. */
  type: string;
  size: number;
}

/** Entries from the command's output (folders first, then by name); malformed records are skipped. */
export function parseListing(bytes: Uint8Array): Entry[] {
  const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  const out: Entry[] = [];
  for (const record of text.split('\0')) {
    const first = record.indexOf('\t');
    const second = record.indexOf('\t', first + 1);
    if (first !== 1 || second < 0) continue;
    const size = Number(record.slice(first + 1, second));
    const name = record.slice(second + 1);
    if (!Number.isSafeInteger(size) || name === '' || name.includes('/')) continue;
    out.push({ type: record[0]!, size, name });
  }
  return out.sort((a, b) =>
    (a.type === 'd') !== (b.type === 'd') ? (a.type === 'd' ? -1 : 1) : a.name.localeCompare(b.name),
  );
}

/** A workspace-relative path joined from a folder and a name ('' is the workspace itself). */
export function joinPath(folder: string, name: string): string {
  const f = folder.replace(/^\/+|\/+$/g, '');
  return f === '' ? name : `${f}/${name}`;
}

/** The parent of a workspace-relative folder. */
export function parentPath(folder: string): string {
  const f = folder.replace(/^\/+|\/+$/g, '');
  const at = f.lastIndexOf('/');
  return at < 0 ? '' : f.slice(0, at);
}

/** True for names whose bytes the console shows as an image (an <img> never runs script, SVG included). */
export function isImageName(name: string): boolean {
  return /\.(png|jpe?g|gif|webp|svg|bmp|ico)$/i.test(name);
}

/** A byte count for people. */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
