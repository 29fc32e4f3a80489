/**
 * The previews tab: a signed, expiring link to a port of the session, opened on the preview's own
 * origin (ADR 0032). The link sets a cookie for that origin only; the API key never leaves this
 * page's headers.
 */
import { createPreviewLink, type PreviewLink } from '../api.js';
import type { Ctx, View } from '../context.js';
import { el, field, replace } from '../dom.js';

/** Mounts the previews tab for a session. */
export function previewsView(panel: HTMLElement, ctx: Ctx, session: string): View {
  const port = field('preview-port', 'Port of the server in the sandbox', {
    type: 'number',
    min: 1,
    max: 65535,
    value: 8000,
    required: true,
  });
  const ttl = field('preview-ttl', 'Link lifetime in seconds', {
    type: 'number',
    min: 1,
    max: 86400,
    value: 3600,
  });
  const links = el('ul', { class: 'links', 'aria-label': 'Preview links' });
  const made: PreviewLink[] = [];

  const render = (): void =>
    replace(
      links,
      ...made.map((l) =>
        el(
          'li',
          {},
          el('a', {
            href: l.url,
            target: '_blank',
            rel: 'noopener noreferrer',
            text: `Open port ${l.port} (${l.origin})`,
          }),
          ` expires ${new Date(l.expiresAt).toLocaleString()}`,
        ),
      ),
    );

  const create = async (): Promise<void> => {
    ctx.fail(undefined);
    const ttlSeconds = Number(ttl.input.value);
    const link = await createPreviewLink(ctx, session, {
      port: Number(port.input.value),
      ...(ttlSeconds > 0 ? { ttlSeconds } : {}),
    });
    made.unshift(link);
    render();
    ctx.report(
      `Preview link for port ${link.port} made; it expires ${new Date(link.expiresAt).toLocaleString()}.`,
    );
  };

  replace(
    panel,
    el('p', {
      class: 'hint',
      text: 'Start a server in the sandbox that listens on 0.0.0.0 (e.g. as a background process), then make a link to its port.',
    }),
    el(
      'form',
      {
        class: 'toolbar',
        onsubmit: (ev: Event) => (ev.preventDefault(), void create().catch((err: unknown) => ctx.fail(err))),
      },
      port.row,
      ttl.row,
      el('button', { type: 'submit', text: 'Make preview link' }),
    ),
    links,
  );
  return { dispose: () => undefined };
}
