/**
 * The processes tab: start a background command, list the session's processes, follow one's
 * output (re-followed from its offsets after each follow's time limit, until it exits or the
 * person stops), send it a signal, remove an exited one. Output is shown as text, bounded.
 */
import { decodeOutput, type ProcessInfo, type ProcessSignal } from '@sandbox-platform/client';

import type { Ctx, View } from '../context.js';
import { button, el, field, replace } from '../dom.js';

/** Characters of followed output kept on the page (the oldest are dropped). */
const MAX_LOG_CHARS = 256 * 1024;
const SIGNALS: ProcessSignal[] = [
  'SIGTERM',
  'SIGINT',
  'SIGKILL',
  'SIGHUP',
  'SIGUSR1',
  'SIGUSR2',
  'SIGSTOP',
  'SIGCONT',
  'SIGQUIT',
];

/** Mounts the processes tab for a session. */
export function processesView(panel: HTMLElement, ctx: Ctx, session: string): View {
  const command = field('process-command', 'Command to run in the background', {
    placeholder: 'python3 -m http.server 8000',
    autocomplete: 'off',
  });
  const table = el('table', { class: 'listing', 'aria-label': 'Processes' });
  const logTitle = el('h3', { text: 'Output' });
  const log = el('pre', { class: 'log', tabindex: '0', 'aria-label': 'Followed output' });
  let follow: AbortController | undefined;
  let disposed = false;
  const run = (what: () => Promise<void>): void => void what().catch((err: unknown) => ctx.fail(err));

  const refresh = async (): Promise<void> => {
    const ps = await ctx.client.listProcesses(session);
    if (!disposed) render(ps);
  };

  const append = (text: string): void => {
    const all = (log.textContent ?? '') + text;
    log.textContent = all.length > MAX_LOG_CHARS ? all.slice(all.length - MAX_LOG_CHARS) : all;
    log.scrollTop = log.scrollHeight;
  };

  /** One follow from `offsets` (advanced as output comes); true once the process exited. */
  const followOnce = async (
    id: string,
    offsets: { stdoutOffset: number; stderrOffset: number },
    decoders: { stdout: TextDecoder; stderr: TextDecoder },
    signal: AbortSignal,
  ): Promise<boolean> => {
    const query = { ...offsets, timeoutSeconds: 60 };
    for await (const ev of ctx.client.followProcess(session, id, query, { signal })) {
      if (ev.type === 'exit') {
        append(`\n[exited${ev.signal ? ` by ${ev.signal}` : ''} with code ${ev.exitCode}]\n`);
        return true;
      }
      const bytes = decodeOutput(ev.data, ev.encoding);
      append(decoders[ev.type].decode(bytes, { stream: true }));
      offsets[`${ev.type}Offset`] = ev.offset + bytes.length;
    }
    return false;
  };

  const followProcess = async (p: ProcessInfo): Promise<void> => {
    follow?.abort();
    const ac = new AbortController();
    follow = ac;
    logTitle.textContent = `Output of ${p.id}: ${p.command}`;
    log.textContent = '';
    const decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() };
    const offsets = { stdoutOffset: 0, stderrOffset: 0 };
    try {
      // A follow ends without an exit line at its time limit: follow again from the offsets.
      while (!ac.signal.aborted && !(await followOnce(p.id, offsets, decoders, ac.signal)));
    } catch (err) {
      if (!ac.signal.aborted) throw err; // stopped by the person (another follow, or the tab closed)
      return;
    }
    if (!disposed) await refresh();
  };

  const row = (p: ProcessInfo): HTMLElement => {
    const signal = el(
      'select',
      { id: `signal-${p.id}`, 'aria-label': `Signal for process ${p.id}` },
      ...SIGNALS.map((s) => el('option', { value: s, text: s })),
    );
    const running = p.state === 'running';
    return el(
      'tr',
      { 'data-id': p.id },
      el('td', { text: p.id }),
      el('td', {}, el('code', { text: p.command })),
      el('td', {
        text: running ? 'running' : `exited ${p.exitCode ?? ''}${p.signal ? ` (${p.signal})` : ''}`,
      }),
      el(
        'td',
        {},
        button('Follow', () => run(() => followProcess(p)), { 'aria-label': `Follow output of ${p.id}` }),
        running && signal,
        running &&
          button(
            'Send',
            () =>
              run(
                async () => (
                  await ctx.client.signalProcess(session, p.id, signal.value as ProcessSignal),
                  await refresh()
                ),
              ),
            { 'aria-label': `Send the signal to ${p.id}` },
          ),
        !running &&
          button(
            'Remove',
            () => run(async () => (await ctx.client.removeProcess(session, p.id), await refresh())),
            { 'aria-label': `Remove ${p.id}` },
          ),
      ),
    );
  };

  const render = (ps: ProcessInfo[]): void =>
    replace(
      table,
      el('caption', { text: `${ps.length} processes` }),
      el(
        'thead',
        {},
        el(
          'tr',
          {},
          ...['Id', 'Command', 'State', 'Actions'].map((t) => el('th', { scope: 'col', text: t })),
        ),
      ),
      el('tbody', {}, ...ps.map(row)),
    );

  const start = async (): Promise<void> => {
    const text = command.input.value.trim();
    if (!text) return;
    ctx.fail(undefined);
    const p = await ctx.client.startProcess(session, { command: text });
    command.input.value = '';
    ctx.report(`Started process ${p.id}.`);
    await refresh();
    await followProcess(p);
  };

  const form = el(
    'form',
    { class: 'toolbar', onsubmit: (ev: Event) => (ev.preventDefault(), run(start)) },
    command.row,
    el('button', { type: 'submit', text: 'Start' }),
    button('Refresh', () => run(refresh)),
  );
  replace(panel, form, table, logTitle, log);
  run(refresh);
  return {
    dispose: () => {
      disposed = true;
      follow?.abort();
    },
  };
}
