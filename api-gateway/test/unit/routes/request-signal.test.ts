import { describe, expect, it } from '@jest/globals';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';

import { ResponseSignal, responseSignal } from '../../../src/routes/request-signal.js';

/** Just the part of a ServerResponse that responseSignal uses. */
function fakeResponse(): ServerResponse & { writableFinished: boolean } {
  return Object.assign(new EventEmitter(), { writableFinished: false }) as unknown as ServerResponse & {
    writableFinished: boolean;
  };
}

describe('ResponseSignal', () => {
  it('calls each listener once on abort, not removed ones, and none added after the abort', () => {
    const s = new ResponseSignal();
    const calls: string[] = [];
    const a = (): void => void calls.push('a');
    const b = (): void => void calls.push('b');
    s.addEventListener('abort', a, { once: true });
    s.addEventListener('abort', a);
    s.addEventListener('abort', b);
    s.removeEventListener('abort', b);
    expect(s.aborted).toBe(false);
    s.abort();
    s.abort();
    s.addEventListener('abort', b);
    expect(s.aborted).toBe(true);
    expect(calls).toEqual(['a']);
  });

  it('behaves like an AbortSignal for the same sequence', () => {
    const c = new AbortController();
    const calls: string[] = [];
    const a = (): void => void calls.push('a');
    const b = (): void => void calls.push('b');
    c.signal.addEventListener('abort', a, { once: true });
    c.signal.addEventListener('abort', a);
    c.signal.addEventListener('abort', b);
    c.signal.removeEventListener('abort', b);
    c.abort();
    c.signal.addEventListener('abort', b);
    expect(calls).toEqual(['a']);
  });
});

describe('responseSignal', () => {
  it('aborts when the response closes unfinished (the client went away)', () => {
    const res = fakeResponse();
    const { signal } = responseSignal(res);
    res.emit('close');
    expect(signal.aborted).toBe(true);
  });

  it('does not abort when the response closes after it was sent, or after dispose()', () => {
    const done = fakeResponse();
    const a = responseSignal(done);
    done.writableFinished = true;
    done.emit('close');
    expect(a.signal.aborted).toBe(false);

    const disposed = fakeResponse();
    const b = responseSignal(disposed);
    b.dispose();
    disposed.emit('close');
    expect(b.signal.aborted).toBe(false);
    expect(disposed.listenerCount('close')).toBe(0);
  });
});
