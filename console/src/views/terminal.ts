/**
 * The terminal tab: xterm.js over the gateway's terminal WebSocket (binary frames are terminal
 * bytes both ways; text frames are JSON: resize from here, one exit from the sandbox). The key
 * travels in a subprotocol (api.ts), never in the URL. The terminal follows its panel's size.
 */
import { FitAddon } from '@xterm/addon-fit';
import { Terminal } from '@xterm/xterm';

import { terminalProtocols, webSocketUrl } from '../api.js';
import type { Ctx, View } from '../context.js';
import { button, el, replace } from '../dom.js';

/** Mounts the terminal tab for a session. */
export function terminalView(panel: HTMLElement, ctx: Ctx, session: string): View {
  const screen = el('div', { class: 'terminal', 'aria-label': `Terminal of ${session}` });
  const state = el('p', { class: 'hint', text: 'Not connected.' });
  let ws: WebSocket | undefined;
  let term: Terminal | undefined;
  let observer: ResizeObserver | undefined;

  const close = (): void => {
    observer?.disconnect();
    ws?.close(1000, 'closed by the console');
    term?.dispose();
    ws = undefined;
    term = undefined;
    observer = undefined;
    openButton.disabled = false;
  };

  const open = (): void => {
    close();
    openButton.disabled = true;
    const t = new Terminal({ cursorBlink: true, convertEol: false, fontSize: 14, scrollback: 2000 });
    const fit = new FitAddon();
    t.loadAddon(fit);
    replace(screen);
    t.open(screen);
    fit.fit();
    term = t;
    const ns = ctx.namespace ? `&namespace=${encodeURIComponent(ctx.namespace)}` : '';
    const path = `/v1/sessions/${encodeURIComponent(session)}/pty?cols=${t.cols}&rows=${t.rows}${ns}`;
    const socket = new WebSocket(webSocketUrl(ctx.base, path), terminalProtocols(ctx.key));
    socket.binaryType = 'arraybuffer';
    ws = socket;
    state.textContent = 'Connecting...';
    const encoder = new TextEncoder();
    socket.onopen = () => {
      state.textContent = 'Connected.';
      t.focus();
    };
    socket.onmessage = (ev: MessageEvent<ArrayBuffer | string>) => {
      if (typeof ev.data !== 'string') return t.write(new Uint8Array(ev.data));
      const msg = JSON.parse(ev.data) as { type?: string; exitCode?: number };
      if (msg.type === 'exit') state.textContent = `The shell exited with code ${msg.exitCode ?? '?'}.`;
    };
    socket.onclose = (ev) => {
      if (ws === socket) openButton.disabled = false;
      if (ev.code !== 1000)
        state.textContent = `Disconnected (${ev.code}${ev.reason ? `: ${ev.reason}` : ''}).`;
    };
    socket.onerror = () =>
      ctx.fail(new Error('the terminal could not be opened (the session may not be ready)'));
    t.onData((data) => {
      if (socket.readyState === WebSocket.OPEN) socket.send(encoder.encode(data));
    });
    t.onResize(({ cols, rows }) => {
      if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type: 'resize', cols, rows }));
    });
    observer = new ResizeObserver(() => fit.fit());
    observer.observe(screen);
  };

  const openButton = button('Open terminal', open);
  const closeButton = button('Close terminal', close);
  replace(panel, el('div', { class: 'toolbar' }, openButton, closeButton, state), screen);
  return { dispose: close };
}
