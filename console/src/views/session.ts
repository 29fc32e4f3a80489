/** One session: its name and live status, and its tabs (terminal, files, processes, previews, code). */
import type { Session } from '@sandbox-platform/client';

import type { Ctx, View } from '../context.js';
import { el, replace } from '../dom.js';
import { codeView } from './code.js';
import { filesView } from './files.js';
import { previewsView } from './previews.js';
import { processesView } from './processes.js';
import { statusText } from './sessions.js';
import { tabs } from './tabs.js';
import { terminalView } from './terminal.js';

/** The detail view, with a way to pass it fresh state from the list's polling. */
export interface SessionView extends View {
  name: string;
  update(s: Session | undefined): void;
}

/** Mounts a session's detail view in `panel`. */
export function sessionView(panel: HTMLElement, ctx: Ctx, name: string): SessionView {
  const status = el('span', { class: 'session-status', text: '' });
  const t = tabs(
    [
      { id: 'terminal', label: 'Terminal', mount: (p) => terminalView(p, ctx, name) },
      { id: 'files', label: 'Files', mount: (p) => filesView(p, ctx, name) },
      { id: 'processes', label: 'Processes', mount: (p) => processesView(p, ctx, name) },
      { id: 'previews', label: 'Previews', mount: (p) => previewsView(p, ctx, name) },
      { id: 'code', label: 'Code', mount: (p) => codeView(p, ctx, name) },
    ],
    'session',
  );
  replace(panel, el('h2', { id: 'session-title' }, `Session ${name} `, status), t.root);
  return {
    name,
    update: (s) => {
      status.textContent = s ? `(${statusText(s)})` : '(deleted)';
    },
    dispose: () => t.dispose(),
  };
}
