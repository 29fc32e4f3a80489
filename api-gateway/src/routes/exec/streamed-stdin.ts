/**
 * The NDJSON body of `POST /v1/sessions/{name}/exec/stream`: the exec request on the first line
 * (read here, bounded by the body limit, then validated by the route's schema like a JSON body, so
 * a bad one is a 400 before the agent is called), then stdin lines, which stay in the request
 * stream and go to the agent through a StdinGuard as they arrive.
 */
import type { Readable } from 'node:stream';

import { NDJSON_CONTENT_TYPE } from '@sandbox-platform/api';
import type { FastifyRequest } from 'fastify';

import { ProblemError } from '../../errors.js';
import { StdinGuard, type StdinLimits } from '../../exec/guards/stdin-guard.js';
import type { CpuMeter } from '../../limits/cpu-meter.js';

const NEWLINE = 0x0a;

/** True when the request's body is NDJSON (its media type, parameters ignored). */
export function isNdjsonRequest(request: FastifyRequest): boolean {
  const type = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  return type === NDJSON_CONTENT_TYPE;
}

/**
 * Reads the first line of an NDJSON body (at most `maxBytes`) and parses it as JSON; what came
 * after it is put back into `payload`, which is left paused for the stdin lines.
 */
export function readRequestLine(payload: Readable, maxBytes: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const pieces: Buffer[] = [];
    let size = 0;
    const finish = (err: Error | undefined, rest?: Buffer): void => {
      payload.off('data', onData);
      payload.off('end', onEnd);
      payload.off('error', onError);
      payload.pause();
      if (err) return reject(err);
      if (rest && rest.length > 0) payload.unshift(rest);
      const line = Buffer.concat(pieces).toString('utf8').trim();
      if (line.length === 0)
        return reject(new ProblemError('invalid-request', 'the body has no request line'));
      try {
        resolve(JSON.parse(line));
      } catch {
        reject(new ProblemError('invalid-request', 'the request line is not valid JSON'));
      }
    };
    const onData = (chunk: Buffer): void => {
      const nl = chunk.indexOf(NEWLINE);
      const head = nl < 0 ? chunk : chunk.subarray(0, nl);
      size += head.length;
      if (size > maxBytes) {
        return finish(new ProblemError('payload-too-large', `the request line exceeds ${maxBytes} bytes`));
      }
      pieces.push(head);
      if (nl >= 0) finish(undefined, chunk.subarray(nl + 1));
    };
    const onEnd = (): void => finish(undefined);
    const onError = (err: Error): void => finish(err);
    payload.on('data', onData);
    payload.once('end', onEnd);
    payload.once('error', onError);
  });
}

/**
 * The request's stdin lines through a StdinGuard. The caller going away mid-stdin destroys the
 * guard (the agent call fails and the agent stops the command); the guard ending or failing
 * detaches it, and the rest of the body is read and dropped so the connection can answer (node's
 * request timeout bounds how long).
 */
export function streamStdin(payload: Readable, limits: StdinLimits, meter: CpuMeter): StdinGuard {
  const guard = new StdinGuard(limits, meter);
  // Its errors are the agent call's to report (the call reading it fails with them); a guard no
  // call reads any more (the call failed before, or its answer ended) has nobody left to tell.
  guard.on('error', () => undefined);
  const onClose = (): void => {
    if (!payload.readableEnded) guard.destroy(new Error('the caller went away while sending stdin'));
  };
  payload.once('close', onClose);
  guard.once('close', () => {
    payload.off('close', onClose);
    payload.unpipe(guard);
    if (!payload.readableEnded && !payload.destroyed) payload.resume();
  });
  payload.pipe(guard);
  return guard;
}
