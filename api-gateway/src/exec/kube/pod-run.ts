/**
 * One pods/exec run of the KubernetesExec transport: stream sinks, the exit status from the status
 * channel, the hard deadline (timeout + margin closes the socket), and the NDJSON encoding of
 * streamed output. Reports its outcome exactly once.
 */
import { Writable } from 'node:stream';

import { ProblemError } from '../../errors.js';
import { exitCodeOf, type ExecStatus } from './exec-status.js';
import { CappedBuffer, Utf8Chunker, encodeOutput } from '../output.js';
import type { CancelSignal, ExecStreamEvent, UploadBody } from '../types.js';

/** The WebSocket pods/exec returns (client-node's is a `ws` WebSocket). */
export interface ExecSocket {
  readonly protocol: string;
  close(): void;
  on(event: 'close', listener: () => void): unknown;
}

/** What one run produced (output went to the sinks). */
export interface RunOutcome {
  exitCode: number;
  timedOut: boolean;
  durationMs: number;
}

export interface RunSpec {
  argv: string[];
  stdout: (chunk: Buffer) => void;
  stderr: (chunk: Buffer) => void;
  /** Bytes for stdin (uploads), in memory or a stream; needs the v5 protocol to half-close stdin. */
  stdin?: UploadBody;
  /** Command timeout in ms; the socket is closed at timeout + margin. */
  timeoutMs: number;
  signal?: CancelSignal;
}

/** One pods/exec call: collects the status, enforces the hard deadline, reports the outcome once. */
export class PodRun {
  readonly stdout: Writable;
  readonly stderr: Writable;
  readonly done: Promise<RunOutcome>;
  private resolve!: (r: RunOutcome) => void;
  private reject!: (e: Error) => void;
  private readonly startedAt = Date.now();
  private status: ExecStatus | undefined;
  private socket: ExecSocket | undefined;
  private hardTimeout = false;
  private settled = false;
  private readonly timer: NodeJS.Timeout;
  private readonly onAbort = (): void => this.cancel();

  constructor(
    private readonly spec: RunSpec,
    marginMs: number,
  ) {
    this.stdout = sink(spec.stdout);
    this.stderr = sink(spec.stderr);
    this.done = new Promise((res, rej) => {
      this.resolve = res;
      this.reject = rej;
    });
    // Callers that bail out early (upload refused) never await `done`: keep its rejection handled.
    this.done.catch(() => undefined);
    this.timer = setTimeout(() => {
      this.hardTimeout = true;
      this.close();
      this.finish();
    }, spec.timeoutMs + marginMs);
    spec.signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  attach(socket: ExecSocket): void {
    this.socket = socket;
    socket.on('close', () => this.finish());
    if (this.settled) socket.close();
  }

  onStatus(status: ExecStatus): void {
    this.status = status;
    this.finish();
  }

  /** The caller went away: close the socket (the in-pod `timeout` still bounds the command). */
  cancel(): void {
    this.close();
    this.dispose();
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.spec.signal?.removeEventListener('abort', this.onAbort);
  }

  private close(): void {
    try {
      this.socket?.close();
    } catch {
      // closing an already-closed socket: nothing left to release
    }
  }

  private finish(): void {
    if (this.settled) return;
    this.settled = true;
    this.dispose();
    const durationMs = Date.now() - this.startedAt;
    if (this.status) {
      try {
        const exitCode = exitCodeOf(this.status);
        const timedOut = durationMs >= this.spec.timeoutMs && (exitCode === 124 || exitCode === 137);
        this.resolve({ exitCode: timedOut ? 124 : exitCode, timedOut, durationMs });
      } catch (e) {
        this.reject(e as Error);
      }
      return;
    }
    if (this.hardTimeout) {
      this.resolve({ exitCode: 124, timedOut: true, durationMs });
      return;
    }
    this.reject(new ProblemError('upstream-error', 'the exec stream closed without an exit status'));
  }
}

function sink(onChunk: (c: Buffer) => void): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, cb): void {
      onChunk(chunk);
      cb();
    },
  });
}

/** Turns one stream's bytes into capped NDJSON events without splitting characters. */
export class StreamSink {
  private readonly chunker = new Utf8Chunker();
  private readonly cap: CappedBuffer;

  constructor(
    private readonly type: 'stdout' | 'stderr',
    max: number,
    private readonly emit: (ev: ExecStreamEvent) => void,
  ) {
    this.cap = new CappedBuffer(max);
  }

  get truncated(): boolean {
    return this.cap.truncated;
  }

  push(chunk: Buffer): void {
    const kept = this.cap.push(chunk);
    if (kept.length > 0) this.send(this.chunker.push(kept));
  }

  flush(): void {
    this.send(this.chunker.flush());
  }

  private send(bytes: Buffer): void {
    if (bytes.length === 0) return;
    const { data, encoding } = encodeOutput(bytes);
    this.emit({ type: this.type, data, encoding });
  }
}
