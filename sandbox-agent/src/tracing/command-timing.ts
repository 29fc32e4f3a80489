/**
 * The command's span, as the agent records it: when a call carries a sampled W3C `traceparent`
 * (from the gateway), the agent measures how long the command waited for the shell (queue), how
 * long it ran, how many output bytes it wrote and its exit status, and answers them in a
 * `Server-Timing` header (the W3C syntax):
 *
 *     server-timing: queue;dur=0.412, run;dur=35.250, output;desc=1234, exit;desc=0
 *
 * The gateway records them as the agent's span, a child of its call's span
 * (api-gateway/src/tracing/agent-timing.ts). The agent exports nothing itself: a sandbox keeps
 * its default-deny egress and gets no channel to a collector (docs/adr/0019). Never the command,
 * its output or its stdin; without a sampled traceparent nothing is measured or sent.
 */
import type { IncomingMessage } from 'node:http';

import type { OutputStream } from '../shell/bash-process.js';
import type { OutputObserver } from '../shell/execution.js';

/** version 00, trace id, parent id, flags; all-zero ids are invalid (W3C Trace Context). */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The parts of a valid traceparent header. */
export interface TraceParent {
  readonly traceId: string;
  readonly parentId: string;
  readonly sampled: boolean;
}

/** A valid traceparent (one header, version 00), else undefined: a bad one is ignored, as the spec says. */
export function parseTraceparent(value: string | string[] | undefined): TraceParent | undefined {
  if (typeof value !== 'string') return undefined;
  const m = TRACEPARENT.exec(value.trim());
  if (!m) return undefined;
  const [, traceId, parentId, flags] = m as unknown as [string, string, string, string];
  if (/^0+$/.test(traceId) || /^0+$/.test(parentId)) return undefined;
  return { traceId, parentId, sampled: (parseInt(flags, 16) & 1) === 1 };
}

/** Timings of one command; `observe` wraps the route's output observer. */
export class CommandTiming {
  private readonly receivedAt = performance.now();
  private startedAt: number | undefined;
  private outputBytes = 0;

  /** A timing for the request when it carries a sampled traceparent; undefined otherwise (no cost). */
  static of(req: IncomingMessage): CommandTiming | undefined {
    return parseTraceparent(req.headers.traceparent)?.sampled ? new CommandTiming() : undefined;
  }

  /** The observer to run the command with: `inner` sees everything, this counts on the way. */
  observe(inner: OutputObserver): OutputObserver {
    return {
      onStart: () => {
        this.startedAt = performance.now();
        inner.onStart?.();
      },
      onOutput: (stream: OutputStream, chunk: Buffer) => {
        this.outputBytes += chunk.length;
        inner.onOutput(stream, chunk);
      },
    };
  }

  /** The Server-Timing value for a finished command (run: the shell's duration if it never started). */
  header(result: { exitCode: number; durationMs: number }): string {
    const end = performance.now();
    const queueMs = (this.startedAt ?? end) - this.receivedAt;
    const runMs = this.startedAt === undefined ? result.durationMs : end - this.startedAt;
    return (
      `queue;dur=${Math.max(0, queueMs).toFixed(3)}, run;dur=${Math.max(0, runMs).toFixed(3)}, ` +
      `output;desc=${this.outputBytes}, exit;desc=${result.exitCode}`
    );
  }
}
