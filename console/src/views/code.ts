/**
 * The code tab: run Python in one of the session's code contexts (a Jupyter kernel in the
 * sandbox, images with the code interpreter only) and show its events as they come: output as
 * text, results and displays by MIME type (images from blob: URLs; HTML, SVG and everything else
 * shown as text, never rendered), the error's traceback without terminal colours.
 */
import type { CodeEvent, CodeOutput } from '@sandbox-platform/client';

import type { Ctx, View } from '../context.js';
import { el, field, replace } from '../dom.js';

/** Image types shown as images (from blob: URLs: an <img> runs no script). */
const IMAGES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];
/** Characters of output kept on the page per run. */
const MAX_CHARS = 256 * 1024;

/** Terminal colour codes removed from tracebacks. */
export function stripAnsi(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\u001b\[[0-9;]*[A-Za-z]/g, '');
}

/** Mounts the code tab for a session. */
export function codeView(panel: HTMLElement, ctx: Ctx, session: string): View {
  const source = el('textarea', {
    id: 'code-source',
    rows: 6,
    spellcheck: 'false',
    text: "print('hello')\n21 * 2",
  });
  const context = field('code-context', 'Context', { value: 'default', autocomplete: 'off' });
  const out = el('div', { class: 'code-out', 'aria-live': 'polite' });
  const status = el('p', { class: 'hint', text: '' });
  const urls: string[] = [];
  let run: AbortController | undefined;

  const text = (cls: string, t: string): HTMLElement =>
    el('pre', { class: `code-${cls}`, text: t.slice(-MAX_CHARS) });

  const output = (o: CodeOutput): HTMLElement => {
    const image = IMAGES.find((m) => o.data[m] !== undefined);
    if (image) {
      const bin = atob(o.data[image]!);
      const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
      const url = URL.createObjectURL(new Blob([bytes], { type: image }));
      urls.push(url);
      return el('img', { src: url, alt: `${o.type} (${image})` });
    }
    const plain =
      o.data['text/plain'] ??
      Object.entries(o.data)
        .map(([m, v]) => `${m}: ${v}`)
        .join('\n');
    return text(o.type, plain);
  };

  const show = (ev: CodeEvent): void => {
    if (ev.type === 'stdout' || ev.type === 'stderr') {
      out.append(text(ev.type, (ev as { text: string }).text));
    } else if (ev.type === 'result' || ev.type === 'display') {
      out.append(output(ev));
    } else if (ev.type === 'error') {
      const e = ev as { name: string; value: string; traceback: string[] };
      out.append(text('error', stripAnsi([`${e.name}: ${e.value}`, ...e.traceback].join('\n'))));
    } else if (ev.type === 'end') {
      const end = ev as { status: string; durationMs: number; contextReset: boolean };
      const reset = end.contextReset ? ' (new kernel: earlier variables are gone)' : '';
      status.textContent = `Run ${end.status} in ${end.durationMs} ms${reset}.`;
    }
  };

  const execute = async (): Promise<void> => {
    run?.abort();
    const ac = new AbortController();
    run = ac;
    ctx.fail(undefined);
    replace(out);
    status.textContent = 'Running...';
    try {
      const events = ctx.client.runCodeStream(
        session,
        { code: source.value, context: context.input.value.trim() || 'default' },
        { signal: ac.signal },
      );
      for await (const ev of events) show(ev);
    } catch (err) {
      if (!ac.signal.aborted) {
        status.textContent = '';
        throw err;
      }
    }
  };

  replace(
    panel,
    el(
      'form',
      {
        class: 'code-form',
        onsubmit: (ev: Event) => (ev.preventDefault(), void execute().catch((err: unknown) => ctx.fail(err))),
      },
      el(
        'div',
        { class: 'field' },
        el('label', { for: 'code-source', text: 'Python code (needs an image with the code interpreter)' }),
        source,
      ),
      el('div', { class: 'toolbar' }, context.row, el('button', { type: 'submit', text: 'Run code' })),
    ),
    status,
    out,
  );
  return {
    dispose: () => {
      run?.abort();
      for (const url of urls) URL.revokeObjectURL(url);
    },
  };
}
