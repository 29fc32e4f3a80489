/**
 * The agent's terminals: `GET /v1/pty` upgraded to a WebSocket, one terminal (an interactive bash
 * on its own PTY) per connection, at most `maxTerminals` at a time. The WebSocket side is the `ws`
 * package, bundled into the agent (docs/adr/0018-agent-wire-contract-and-interactive-calls.md); it handles the protocol's
 * framing, masking, fragmentation, control frames and close handshake.
 *
 * Frames: binary frames carry terminal bytes both ways; text frames carry JSON control messages:
 * from the client `{"type":"resize","cols","rows"}` (PtyResizeMessage), from the agent one
 * `{"type":"exit","exitCode","signal"?}` (ExitEvent) when the shell ended, followed by a close
 * with code 1000. An invalid control message closes with 1008 and a reason; the client leaving
 * hangs the terminal up. Memory per terminal is bounded: client messages are at most
 * PTY_MAX_MESSAGE_BYTES and reading stops while the helper's input is full; terminal output is
 * read only while less than OUTPUT_HIGH_WATER bytes wait to be sent to the client.
 */
import { access, constants } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import type { Duplex, Readable } from 'node:stream';

import { type ExitEvent, PTY_MAX_MESSAGE_BYTES, type PtyQuery } from '@sandbox-platform/api';
import { type WebSocket, WebSocketServer } from 'ws';

import { HttpProblem } from '../http/problem.js';
import { describeError, VALIDATORS } from '../http/validate.js';
import type { Logger } from '../log.js';
import { errorMessage } from '../log.js';
import { withCarriers } from '../shell/persistent-shell.js';
import { sessionEnvInit, shellQuote } from '../shell/wrapper.js';
import { Terminal } from './terminal.js';

/** Terminal output waiting to be sent beyond which reading from the terminal pauses. */
export const OUTPUT_HIGH_WATER = 1024 * 1024;
/** Below this, reading resumes. */
const OUTPUT_LOW_WATER = 256 * 1024;

/** WebSocket close codes the agent uses. */
export const CLOSE_CODES = {
  /** The shell ended (after the exit message). */
  normal: 1000,
  /** The agent is shutting down. */
  goingAway: 1001,
  /** The client sent an invalid control message. */
  policy: 1008,
  /** The terminal could not be started. */
  internal: 1011,
} as const;

/** Options of {@link Terminals}. */
export interface TerminalsOptions {
  /** Path of the sandbox-pty helper. */
  helperPath: string;
  bashPath: string;
  workspace: string;
  /** The shell's start environment (agent secrets already removed). */
  env: NodeJS.ProcessEnv;
  sessionEnv: Readonly<Record<string, string>>;
  maxTerminals: number;
  logger: Logger;
}

/** Terminal type announced to programs on the terminal. */
const TERM = 'xterm-256color';

/** See the module comment. */
export class Terminals {
  private readonly wss = new WebSocketServer({
    noServer: true,
    maxPayload: PTY_MAX_MESSAGE_BYTES,
    perMessageDeflate: false,
    clientTracking: false,
  });
  /** Open terminals and upgrades in flight (each holds a slot of maxTerminals). */
  private readonly slots = new Set<Slot>();
  private helperOk = false;
  private closing = false;

  constructor(private readonly opts: TerminalsOptions) {}

  /** Checks the helper once at start; without it, /v1/pty answers 503 pty-unavailable. */
  async start(): Promise<void> {
    try {
      await access(this.opts.helperPath, constants.X_OK);
      this.helperOk = true;
    } catch (err) {
      this.opts.logger.warn('terminal helper missing, /v1/pty is unavailable', {
        path: this.opts.helperPath,
        error: errorMessage(err),
      });
    }
  }

  /** Open terminals (and upgrades in flight). */
  get count(): number {
    return this.slots.size;
  }

  /**
   * Takes the request over when a terminal can be opened now; throws the problem to answer
   * otherwise (the socket is still the caller's then). `logger` writes the terminal's lines (the
   * request's, with its trace ids when the gateway traced it).
   */
  upgrade(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    { query, logger = this.opts.logger }: { query: PtyQuery; logger?: Logger },
  ): void {
    if (this.closing) throw new HttpProblem('shell-unavailable', 'the agent is shutting down');
    if (!this.helperOk) throw new HttpProblem('pty-unavailable', 'this image has no terminal helper');
    if (this.slots.size >= this.opts.maxTerminals) {
      throw new HttpProblem('too-many-terminals', `${this.slots.size} terminals are open, the maximum`);
    }
    const slot = new Slot(this.slots);
    // A handshake ws refuses (it answers 400 itself) never calls back: free the slot on close.
    socket.once('close', () => {
      if (!slot.attached) slot.release();
    });
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      slot.attached = true;
      void this.serve(ws, query, slot, logger);
    });
  }

  /** Accepts terminals again after close() (a quiesce for a suspension that was then cancelled). */
  reopen(): void {
    this.closing = false;
  }

  /** Hangs every terminal up and closes its connection (1001); new ones are refused. */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.all([...this.slots].map((slot) => slot.shutdown()));
  }

  private async serve(ws: WebSocket, query: PtyQuery, slot: Slot, logger: Logger): Promise<void> {
    const { opts } = this;
    // A client may type as soon as the connection is open, before the shell has started (its
    // spawn takes seconds under gVisor on a busy node): stop reading until the terminal exists,
    // and keep what was already read, so no keystroke is lost.
    ws.pause();
    const early: Array<[Buffer, boolean]> = [];
    const keep = (data: Buffer, isBinary: boolean): number => early.push([data, isBinary]);
    ws.on('message', keep);
    let terminal: Terminal;
    try {
      terminal = await Terminal.start({
        helperPath: opts.helperPath,
        argv: [opts.bashPath, '--noprofile', '--norc', '-c', terminalScript(opts, query.cwd)],
        cols: query.cols ?? 80,
        rows: query.rows ?? 24,
        cwd: opts.workspace,
        env: { ...withCarriers(opts.env, opts.sessionEnv), TERM },
        logger,
      });
    } catch (err) {
      logger.error('cannot start a terminal', { error: errorMessage(err) });
      ws.close(CLOSE_CODES.internal, 'cannot start the terminal');
      slot.release();
      return;
    }
    logger.info('terminal opened', { open: this.slots.size });
    slot.shutdown = async () => {
      ws.close(CLOSE_CODES.goingAway, 'the agent is shutting down');
      terminal.hangUp();
      await terminal.ended;
    };
    pipeOutput(terminal, ws);
    ws.off('message', keep);
    ws.on('message', (data: Buffer, isBinary: boolean) => onMessage(terminal, ws, data, isBinary));
    // resume() only lets the socket read again on a later tick, so the early frames go first, and
    // a pause they cause (the terminal's input is full) stays in force.
    ws.resume();
    for (const [data, isBinary] of early) onMessage(terminal, ws, data, isBinary);
    ws.on('error', (err) => logger.debug('terminal connection error', { error: errorMessage(err) }));
    ws.once('close', () => {
      terminal.hangUp();
      terminal.output.resume(); // drain what is left; nobody reads it
    });
    const exit = await terminal.ended;
    sendExit(ws, exit);
    slot.release();
    logger.info('terminal closed', { exitCode: exit.exitCode, signal: exit.signal });
  }
}

/** A place among maxTerminals, held from the upgrade check to the terminal's end. */
class Slot {
  attached = false;
  /** Ends the terminal for a shutdown; replaced once the terminal runs. */
  shutdown: () => Promise<void> = () => Promise.resolve();

  constructor(private readonly slots: Set<Slot>) {
    slots.add(this);
  }

  release(): void {
    this.slots.delete(this);
  }
}

/**
 * The script of the terminal's first bash: export the session env as the persistent shell does,
 * enter the directory, then become an interactive bash (which reads the user's ~/.bashrc).
 */
export function terminalScript(
  opts: Pick<TerminalsOptions, 'bashPath' | 'sessionEnv'>,
  cwd?: string,
): string {
  const cd = cwd === undefined ? '' : `builtin cd -- ${shellQuote(cwd)} || builtin exit 1\n`;
  return `${sessionEnvInit(Object.keys(opts.sessionEnv))}${cd}command exec ${shellQuote(opts.bashPath)} -i\n`;
}

/** What {@link pipeOutput} uses of a connection (a narrow port, faked in tests). */
export interface FrameSink {
  readonly readyState: number;
  readonly OPEN: number;
  send(data: Buffer, options: { binary: boolean }, sent: (err?: Error) => void): void;
}

/**
 * Terminal output to binary frames, pausing the terminal while more than OUTPUT_HIGH_WATER bytes
 * wait to be sent (a client that does not read cannot make the agent hold more).
 */
export function pipeOutput(terminal: { output: Readable }, ws: FrameSink): void {
  let waiting = 0;
  terminal.output.on('data', (chunk: Buffer) => {
    if (ws.readyState !== ws.OPEN) return;
    waiting += chunk.length;
    if (waiting > OUTPUT_HIGH_WATER) terminal.output.pause();
    ws.send(chunk, { binary: true }, () => {
      waiting -= chunk.length;
      if (terminal.output.isPaused() && waiting < OUTPUT_LOW_WATER) terminal.output.resume();
    });
  });
}

/** Client frames: bytes to the terminal (pausing the connection while the terminal is full), or control. */
function onMessage(terminal: Terminal, ws: WebSocket, data: Buffer, isBinary: boolean): void {
  if (isBinary) {
    if (!terminal.write(data)) {
      ws.pause();
      terminal.onDrain(() => ws.resume());
    }
    return;
  }
  let message: unknown;
  try {
    message = JSON.parse(data.toString('utf8')) as unknown;
  } catch {
    refuse(terminal, ws, 'a text message must be a JSON control message');
    return;
  }
  if (!VALIDATORS.ptyResize(message)) {
    refuse(terminal, ws, describeError(VALIDATORS.ptyResize.errors?.[0], 'the message'));
    return;
  }
  terminal.resize(message.cols, message.rows);
}

/** Closes with 1008 and the reason (cut to the 123 bytes a close frame holds), hanging up. */
function refuse(terminal: Terminal, ws: WebSocket, reason: string): void {
  let cut = reason;
  while (Buffer.byteLength(cut) > 123) cut = cut.slice(0, -1);
  ws.close(CLOSE_CODES.policy, cut);
  terminal.hangUp();
}

function sendExit(ws: WebSocket, exit: ExitEvent): void {
  if (ws.readyState !== ws.OPEN) return;
  ws.send(JSON.stringify(exit));
  ws.close(CLOSE_CODES.normal, 'exited');
}
