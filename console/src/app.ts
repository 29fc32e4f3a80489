/**
 * The console's page: sign in with an API key (kept in sessionStorage for this tab only, sent as
 * a header; never in a URL or a cookie), then the sessions list beside the open session.
 */
import type { Ctx, View } from './context.js';
import { createClient, describeError, describeSignInError, gatewayBase } from './api.js';
import { button, el, field, replace } from './dom.js';
import { sessionView, type SessionView } from './views/session.js';
import { sessionsView } from './views/sessions.js';

/** sessionStorage keys (this tab only; gone when it closes). */
export const STORAGE = { key: 'sandbox-console.key', namespace: 'sandbox-console.namespace' } as const;

/** The page's fixed regions (index.html). */
interface Regions {
  main: HTMLElement;
  account: HTMLElement;
  status: HTMLElement;
  error: HTMLElement;
}

function regions(doc: Document): Regions {
  const get = (id: string): HTMLElement => {
    const e = doc.getElementById(id);
    if (!e) throw new Error(`console: index.html has no #${id}`);
    return e;
  };
  return { main: get('main'), account: get('account'), status: get('status'), error: get('error') };
}

/** Starts the console in the page. */
export function startApp(doc: Document, storage: Storage, pageUrl: string): void {
  const r = regions(doc);
  const base = gatewayBase(pageUrl);
  let views: View[] = [];

  const report = (message: string): void => {
    r.status.textContent = message;
  };
  const fail = (err: unknown): void => {
    r.error.hidden = err === undefined;
    r.error.textContent = err === undefined ? '' : describeError(err);
  };
  const stop = (): void => {
    for (const v of views) v.dispose();
    views = [];
  };

  const signOut = (): void => {
    stop();
    storage.removeItem(STORAGE.key);
    storage.removeItem(STORAGE.namespace);
    report('Signed out.');
    showSignIn();
  };

  const showApp = (ctx: Ctx): void => {
    const list = el('aside', { id: 'sessions', 'aria-label': 'Sessions' });
    const detail = el(
      'section',
      { id: 'session', 'aria-label': 'Open session' },
      el('p', { class: 'hint', text: 'Open a session to see its terminal, files, processes and previews.' }),
    );
    let open: SessionView | undefined;
    replace(r.main, el('div', { class: 'layout' }, list, detail));
    replace(
      r.account,
      el('span', { text: ctx.namespace ? `namespace ${ctx.namespace}` : "the key's namespace" }),
      button('Sign out', signOut),
    );
    const sessions = sessionsView(list, ctx, {
      open: (name) => {
        open?.dispose();
        open = sessionView(detail, ctx, name);
        detail.querySelector<HTMLElement>('[role="tab"]')?.focus();
      },
      update: (all) => open?.update(all.find((s) => s.name === open?.name)),
    });
    views = [sessions, { dispose: () => open?.dispose() }];
  };

  const signIn = async (key: string, namespace: string | undefined): Promise<void> => {
    const client = createClient(base, key, namespace);
    // One read proves the key (401) and the namespace (403) before anything is kept.
    await client.listSessions();
    storage.setItem(STORAGE.key, key);
    if (namespace) storage.setItem(STORAGE.namespace, namespace);
    else storage.removeItem(STORAGE.namespace);
    fail(undefined);
    report('Signed in.');
    showApp({ client, base, key, namespace, report, fail });
  };

  const showSignIn = (): void => {
    const key = field('signin-key', 'API key', { type: 'password', autocomplete: 'off', required: true });
    const ns = field('signin-namespace', 'Namespace (optional)', { autocomplete: 'off' });
    const submit = el('button', { type: 'submit', text: 'Sign in' });
    const form = el(
      'form',
      {
        id: 'signin',
        'aria-label': 'Sign in',
        onsubmit: (ev: Event) => {
          ev.preventDefault();
          submit.disabled = true;
          signIn(key.input.value.trim(), ns.input.value.trim() || undefined)
            .catch((err: unknown) => {
              r.error.hidden = false;
              r.error.textContent = describeSignInError(err);
              key.input.focus();
            })
            .finally(() => (submit.disabled = false));
        },
      },
      el('h2', { text: 'Sign in' }),
      el('p', {
        class: 'hint',
        text: 'The key stays in this browser tab (sessionStorage) and is sent only in request headers.',
      }),
      key.row,
      ns.row,
      submit,
    );
    replace(r.account);
    replace(r.main, form);
    key.input.focus();
  };

  const saved = storage.getItem(STORAGE.key);
  if (saved) {
    signIn(saved, storage.getItem(STORAGE.namespace) ?? undefined).catch((err: unknown) => {
      storage.removeItem(STORAGE.key);
      showSignIn();
      r.error.hidden = false;
      r.error.textContent = describeSignInError(err);
    });
  } else {
    showSignIn();
  }
  // The benchmark's time to interactive: the first view is on the page and takes input.
  performance.mark('console-interactive');
  doc.documentElement.dataset.ready = 'true';
}
