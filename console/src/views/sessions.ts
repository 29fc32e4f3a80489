/**
 * The sessions list (live: polled every few seconds while the page is visible) with create,
 * suspend, resume and delete. Delete asks for a second click on the same row.
 */
import type { Session } from '@sandbox-platform/client';

import type { Ctx, View } from '../context.js';
import { button, el, field, replace } from '../dom.js';

/** How often the list is read again. */
const POLL_MS = 3000;

/** A session's state in a few words. */
export function statusText(s: Session): string {
  if (s.suspended) return 'suspended';
  return s.ready ? 'ready' : `not ready: ${s.reason}`;
}

/** What the list view needs from the page. */
export interface SessionsHost {
  /** Opens a session in the detail view. */
  open(name: string): void;
  /** Called after every read with the current sessions. */
  update(sessions: Session[]): void;
}

/** Mounts the sessions list and form in `panel`. */
export function sessionsView(panel: HTMLElement, ctx: Ctx, host: SessionsHost): View {
  const table = el('table', { class: 'listing', id: 'sessions-table', 'aria-label': 'Sessions' });
  const name = field('create-name', 'Name (optional)', {
    autocomplete: 'off',
    pattern: '[a-z0-9]([-a-z0-9]*[a-z0-9])?',
    maxlength: 63,
  });
  const image = field('create-image', 'Image (optional)', { autocomplete: 'off' });
  const pool = field('create-pool', 'Warm pool (optional)', { autocomplete: 'off' });
  const persistent = field('create-persistent', 'Persistent workspace', { type: 'checkbox' });
  let confirming: string | undefined;
  let timer: ReturnType<typeof setInterval> | undefined;
  let disposed = false;
  const run = (what: () => Promise<void>): void => void what().catch((err: unknown) => ctx.fail(err));

  const refresh = async (): Promise<void> => {
    const sessions = await ctx.client.listSessions();
    if (disposed) return;
    render(sessions);
    host.update(sessions);
  };

  const act = (what: string, fn: () => Promise<unknown>): void =>
    run(async () => {
      ctx.fail(undefined);
      await fn();
      ctx.report(what);
      await refresh();
    });

  const row = (s: Session): HTMLElement => {
    const del =
      confirming === s.name
        ? button(
            'Confirm delete',
            () => (
              (confirming = undefined),
              act(`Deleted ${s.name}.`, () => ctx.client.deleteSession(s.name))
            ),
            {
              'aria-label': `Confirm: delete session ${s.name}`,
              class: 'danger',
            },
          )
        : button('Delete', () => ((confirming = s.name), void refresh()), {
            'aria-label': `Delete session ${s.name}`,
          });
    const toggle = s.suspended
      ? button('Resume', () => act(`Resumed ${s.name}.`, () => ctx.client.resumeSession(s.name)), {
          'aria-label': `Resume session ${s.name}`,
        })
      : button('Suspend', () => act(`Suspended ${s.name}.`, () => ctx.client.suspendSession(s.name)), {
          'aria-label': `Suspend session ${s.name}`,
          disabled: !s.persistentWorkspace,
          title: s.persistentWorkspace ? '' : 'Only sessions with a persistent workspace can be suspended',
        });
    return el(
      'tr',
      { 'data-session': s.name },
      el(
        'td',
        {},
        button(s.name, () => host.open(s.name), { 'aria-label': `Open session ${s.name}`, class: 'link' }),
      ),
      el('td', { class: s.ready ? 'ok' : 'wait', text: statusText(s) }),
      // The last path segment fits the column; the whole reference is the cell's title.
      el('td', { text: s.image?.split('/').pop() ?? '(default)', title: s.image ?? '' }),
      el('td', {}, toggle, del),
    );
  };

  const render = (sessions: Session[]): void => {
    const focused = document.activeElement?.getAttribute('aria-label');
    replace(
      table,
      el('caption', { text: `Sessions${ctx.namespace ? ` in ${ctx.namespace}` : ''}: ${sessions.length}` }),
      el(
        'thead',
        {},
        el(
          'tr',
          {},
          ...['Name', 'Status', 'Image', 'Actions'].map((t) => el('th', { scope: 'col', text: t })),
        ),
      ),
      el('tbody', {}, ...sessions.map(row)),
    );
    // A re-render must not take the keyboard focus away from the control the person is on.
    if (focused) table.querySelector<HTMLElement>(`[aria-label="${CSS.escape(focused)}"]`)?.focus();
  };

  const create = async (): Promise<void> => {
    ctx.fail(undefined);
    const { session, created } = await ctx.client.createSession({
      ...(name.input.value.trim() ? { name: name.input.value.trim() } : {}),
      ...(image.input.value.trim() ? { image: image.input.value.trim() } : {}),
      ...(pool.input.value.trim() ? { pool: pool.input.value.trim() } : {}),
      ...(persistent.input.checked ? { persistentWorkspace: true, shutdownPolicy: 'Suspend' as const } : {}),
    });
    ctx.report(`${created ? 'Created' : 'Found'} session ${session.name}.`);
    name.input.value = '';
    await refresh();
    host.open(session.name);
  };

  const form = el(
    'form',
    {
      class: 'create',
      'aria-label': 'Create a session',
      onsubmit: (ev: Event) => (ev.preventDefault(), run(create)),
    },
    el('h2', { text: 'New session' }),
    name.row,
    image.row,
    pool.row,
    persistent.row,
    el('button', { type: 'submit', text: 'Create session' }),
  );
  replace(
    panel,
    el('h2', { text: 'Sessions' }),
    button('Refresh', () => run(refresh)),
    table,
    form,
  );
  run(refresh);
  timer = setInterval(() => {
    if (document.visibilityState === 'visible') run(refresh);
  }, POLL_MS);
  return {
    dispose: () => {
      disposed = true;
      clearInterval(timer);
      timer = undefined;
    },
  };
}
