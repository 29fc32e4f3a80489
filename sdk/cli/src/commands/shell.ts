/**
 * `shell NAME`: an interactive `bash -i` in a session over the gateway's terminal WebSocket
 * (GET /v1/sessions/{name}/pty). The local terminal is put in raw mode while it runs (restored on
 * every way out), keystrokes go as binary frames, the window size as resize messages (also on
 * SIGWINCH), and the exit status of the remote shell is the CLI's. A refusal before the upgrade is
 * the gateway's problem+json, reported like any other call's.
 */
import type { Readable } from 'node:stream';

import { errorFromProblem, type Problem } from '@sandbox-platform/client';
import WebSocket from 'ws';

import { EXIT, UsageError } from '../errors.js';
import { write, type Context } from '../io.js';

/** Largest message the gateway accepts from a terminal client (the agent's PTY_MAX_MESSAGE_BYTES). */
const MAX_MESSAGE_BYTES = 64 * 1024;

interface TtyIn extends Readable {
  isTTY?: boolean;
  setRawMode?: (raw: boolean) => unknown;
}

interface TtyOut {
  columns?: number;
  rows?: number;
  on?(event: 'resize', fn: () => void): unknown;
  off?(event: 'resize', fn: () => void): unknown;
}

/** The terminal URL of a session: ws(s)://<gateway>/v1/sessions/<name>/pty?cols&rows[&namespace]. */
export function ptyUrl(
  base: string,
  name: string,
  size: { cols?: number; rows?: number },
  namespace?: string,
): URL {
  const url = new URL(`${base.replace(/\/+$/, '')}/v1/sessions/${encodeURIComponent(name)}/pty`);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  if (size.cols) url.searchParams.set('cols', String(Math.min(size.cols, 1000)));
  if (size.rows) url.searchParams.set('rows', String(Math.min(size.rows, 1000)));
  if (namespace) url.searchParams.set('namespace', namespace);
  return url;
}

export async function shell(ctx: Context): Promise<number> {
  const [name, ...extra] = ctx.args;
  if (!name || extra.length) throw new UsageError(`shell needs one session: ${ctx.io.prog} shell NAME`);
  const { url, key, namespace } = ctx.settings;
  if (!url)
    throw new UsageError(
      `no gateway URL: pass --url, set SANDBOX_URL, or run ${ctx.io.prog} config set url URL`,
    );
  if (!key)
    throw new UsageError(`no API key: set SANDBOX_KEY, run ${ctx.io.prog} config set key -, or pass --key`);
  const out = ctx.io.stdout as unknown as TtyOut;
  const ws = new WebSocket(ptyUrl(url, name, { cols: out.columns, rows: out.rows }, namespace), {
    headers: { authorization: `Bearer ${key}` },
    perMessageDeflate: false,
  });
  // Messages may arrive between the upgrade and the relay's start: held until then.
  const early: Array<[Buffer, boolean]> = [];
  const hold = (data: Buffer, isBinary: boolean): void => void early.push([data, isBinary]);
  ws.on('message', hold);
  await opened(ws);
  ws.off('message', hold);
  return session(ctx, ws, out, early);
}

/** Resolves once upgraded; rejects with the gateway's problem (or the connection error). */
function opened(ws: WebSocket): Promise<void> {
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body = (body + c).slice(0, 64 * 1024)));
      res.on('end', () => {
        ws.on('error', () => undefined);
        ws.terminate();
        let problem: Problem;
        try {
          problem = JSON.parse(body) as Problem;
        } catch {
          problem = {
            type: 'about:blank',
            title: 'Terminal refused',
            status: res.statusCode ?? 0,
            detail: body.slice(0, 200),
          };
        }
        reject(errorFromProblem(res.statusCode ?? 0, problem, res.headers['retry-after'] ?? null));
      });
    });
  });
}

/** Relays until the remote shell ends; the exit status, or 1 when the connection ended without one. */
function session(ctx: Context, ws: WebSocket, out: TtyOut, early: Array<[Buffer, boolean]>): Promise<number> {
  const input = ctx.io.stdin as TtyIn;
  const raw = input.isTTY === true && typeof input.setRawMode === 'function';
  let status: number | undefined;
  const onInput = (chunk: Buffer | string): void => {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    for (let i = 0; i < bytes.length; i += MAX_MESSAGE_BYTES) {
      ws.send(bytes.subarray(i, i + MAX_MESSAGE_BYTES), { binary: true });
    }
  };
  const onResize = (): void => {
    if (out.columns && out.rows)
      ws.send(JSON.stringify({ type: 'resize', cols: out.columns, rows: out.rows }));
  };
  const onAbort = (): void => ws.close(1000, 'interrupted');
  if (raw) input.setRawMode!(true);
  input.on('data', onInput);
  input.resume();
  out.on?.('resize', onResize);
  ctx.io.signal.addEventListener('abort', onAbort, { once: true });
  const onMessage = (data: Buffer, isBinary: boolean): void => {
    if (isBinary) {
      void write(ctx.io.stdout, data);
      return;
    }
    let msg: { type?: unknown; exitCode?: unknown } = {};
    try {
      msg = JSON.parse(data.toString('utf8')) as typeof msg;
    } catch {
      // Not a control message of the protocol: ignored (the terminal's bytes come as binary).
    }
    if (msg.type === 'exit' && typeof msg.exitCode === 'number') status = msg.exitCode;
  };
  for (const [data, isBinary] of early) onMessage(data, isBinary);
  ws.on('message', onMessage);
  return new Promise((resolve) => {
    ws.once('close', (code, reason) => {
      input.off('data', onInput);
      input.pause();
      if (raw) input.setRawMode!(false);
      out.off?.('resize', onResize);
      ctx.io.signal.removeEventListener('abort', onAbort);
      if (status !== undefined) return resolve(status);
      if (ctx.io.signal.aborted) return resolve(EXIT.interrupted);
      void write(
        ctx.io.stderr,
        `${ctx.io.prog}: the terminal closed (${code}${reason.length ? `: ${reason.toString()}` : ''})\n`,
      ).then(() => resolve(EXIT.error));
    });
    ws.on('error', () => undefined);
  });
}
