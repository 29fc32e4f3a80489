/**
 * The files tab: list a folder of the workspace (listing.ts), go into folders, upload a file into
 * it, view a file (text in a <pre>, images in an <img> from a blob: URL; neither ever runs what
 * the file holds) and download it (a blob typed application/octet-stream, so it is saved, never
 * rendered on the console's origin).
 */
import { stdoutBytes } from '@sandbox-platform/client';

import type { Ctx, View } from '../context.js';
import { button, el, field, replace } from '../dom.js';
import {
  LISTING_COMMAND,
  formatSize,
  isImageName,
  joinPath,
  parentPath,
  parseListing,
  type Entry,
} from '../listing.js';

/** Most bytes of a text file shown. */
const MAX_TEXT_VIEW = 1024 * 1024;

/** Mounts the files tab for a session. */
export function filesView(panel: HTMLElement, ctx: Ctx, session: string): View {
  let folder = '';
  let disposed = false;
  const urls: string[] = [];
  const where = field('files-folder', 'Folder (relative to /workspace)', {
    value: '',
    placeholder: '(workspace)',
  });
  const table = el('table', { class: 'listing', 'aria-label': 'Files' });
  const viewer = el('div', { class: 'viewer', 'aria-live': 'polite' });
  const upload = field('files-upload', 'Upload a file to this folder', { type: 'file' });

  const blobUrl = (bytes: Uint8Array, type: string): string => {
    const url = URL.createObjectURL(new Blob([bytes as BlobPart], { type }));
    urls.push(url);
    return url;
  };

  const list = async (to: string): Promise<void> => {
    ctx.fail(undefined);
    const r = await ctx.client.exec(session, {
      command: LISTING_COMMAND,
      env: { SBX_DIR: to || '.' },
      timeoutSeconds: 30,
    });
    if (disposed) return;
    if (r.exitCode !== 0)
      throw new Error(
        `cannot list ${to || '/workspace'}: ${r.stderr.slice(0, 300) || `exit code ${r.exitCode}`}`,
      );
    folder = to;
    where.input.value = to;
    render(parseListing(stdoutBytes(r)));
  };
  const run = (what: () => Promise<void>): void => void what().catch((err: unknown) => ctx.fail(err));

  const view = async (entry: Entry): Promise<void> => {
    const path = joinPath(folder, entry.name);
    const bytes = await ctx.client.readFile(session, path);
    if (isImageName(entry.name)) {
      replace(
        viewer,
        el('h3', { text: path }),
        el('img', { src: blobUrl(bytes, 'image/*'), alt: `Image ${path}` }),
      );
      return;
    }
    const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes.subarray(0, MAX_TEXT_VIEW));
    const more =
      bytes.length > MAX_TEXT_VIEW
        ? ` (first ${formatSize(MAX_TEXT_VIEW)} of ${formatSize(bytes.length)})`
        : '';
    replace(viewer, el('h3', { text: path + more }), el('pre', { class: 'file-text', tabindex: '0', text }));
  };

  const download = async (entry: Entry): Promise<void> => {
    const path = joinPath(folder, entry.name);
    const bytes = await ctx.client.readFile(session, path);
    const a = el('a', { href: blobUrl(bytes, 'application/octet-stream'), download: entry.name });
    a.click();
    ctx.report(`Downloaded ${path} (${formatSize(bytes.length)}).`);
  };

  const row = (e: Entry): HTMLElement => {
    const isDir = e.type === 'd';
    const path = joinPath(folder, e.name);
    const name = isDir
      ? button(`${e.name}/`, () => run(() => list(path)), { 'aria-label': `Open folder ${e.name}` })
      : el('span', { text: e.name });
    const actions = isDir
      ? []
      : [
          button('View', () => run(() => view(e)), { 'aria-label': `View ${e.name}` }),
          button('Download', () => run(() => download(e)), { 'aria-label': `Download ${e.name}` }),
        ];
    return el(
      'tr',
      { 'data-name': e.name },
      el('td', {}, name),
      el('td', { text: isDir ? 'folder' : e.type === 'l' ? 'link' : formatSize(e.size) }),
      el('td', {}, ...actions),
    );
  };

  const render = (entries: Entry[]): void => {
    const up =
      folder === ''
        ? undefined
        : el(
            'tr',
            {},
            el(
              'td',
              {},
              button('../', () => run(() => list(parentPath(folder))), { 'aria-label': 'Up one folder' }),
            ),
            el('td'),
            el('td'),
          );
    replace(
      table,
      el('caption', {
        text: `${folder === '' ? '/workspace' : `/workspace/${folder}`}: ${entries.length} entries`,
      }),
      el(
        'thead',
        {},
        el(
          'tr',
          {},
          el('th', { scope: 'col', text: 'Name' }),
          el('th', { scope: 'col', text: 'Size' }),
          el('th', { scope: 'col', text: 'Actions' }),
        ),
      ),
      el('tbody', {}, up, ...entries.map(row)),
    );
  };

  upload.input.addEventListener('change', () => {
    const file = upload.input.files?.[0];
    if (!file) return;
    run(async () => {
      const path = joinPath(folder, file.name);
      await ctx.client.writeFile(session, path, await file.arrayBuffer());
      upload.input.value = '';
      ctx.report(`Uploaded ${path} (${formatSize(file.size)}).`);
      await list(folder);
    });
  });

  const form = el(
    'form',
    {
      class: 'toolbar',
      onsubmit: (ev: Event) => (ev.preventDefault(), run(() => list(where.input.value.trim()))),
    },
    where.row,
    el('button', { type: 'submit', text: 'List' }),
  );
  replace(panel, form, upload.row, table, viewer);
  run(() => list(''));
  return {
    dispose: () => {
      disposed = true;
      for (const url of urls) URL.revokeObjectURL(url);
    },
  };
}
