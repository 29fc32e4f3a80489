import { afterEach, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';

import { backoffDelay } from '../../../src/state/backoff.js';
import { RecoveringWatch, WATCH_BACKOFF } from '../../../src/kube/recovering-watch.js';
import { MemoryLogger } from '../../fakes/fakes.js';
import { FakeWatchServer, session, until } from './fake-watch-server.js';

const PATH = '/apis/sandbox.dev/v1alpha1/namespaces/ns1/sandboxsessions';
/** Small delays so the tests run fast; the production cap is WATCH_BACKOFF.maxMs. */
const FAST = { baseMs: 5, maxMs: 40, jitter: 0.2 };

function kubeConfig(port: number): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'u', token: 'x' }],
    contexts: [{ name: 'c', cluster: 'c', user: 'u' }],
    currentContext: 'c',
  });
  return kc;
}

describe('RecoveringWatch against a fake API server', () => {
  let server: FakeWatchServer;
  let watch: RecoveringWatch | undefined;
  const events: string[] = [];
  const logger = new MemoryLogger();

  function startWatch(port: number): Promise<void> {
    const w = new k8s.Watch(kubeConfig(port));
    watch = new RecoveringWatch({
      watch: (path, query, onLine, done) => w.watch(path, query, onLine, done),
      path: PATH,
      logger,
      backoff: FAST,
      onEvent: (type, object) => {
        events.push(`${type} ${(object as { metadata: { name: string } }).metadata.name}`);
      },
    });
    return watch.start();
  }

  const failures = (): Array<Record<string, unknown>> =>
    logger.lines
      .filter((l) => l.message === 'session watch failed; watching again')
      .map((l) => l.fields ?? {});

  afterEach(async () => {
    watch?.close();
    watch = undefined;
    await server.stop();
    events.length = 0;
    logger.lines.length = 0;
  });

  it('retries a refused connection with growing, capped delays until the server listens', async () => {
    server = new FakeWatchServer();
    await server.start();
    const port = server.port;
    await server.stop(); // nothing listens: connection refused
    const started = startWatch(port);
    await until('four refused attempts', () => failures().length >= 4);
    await server.start(port);
    await started;
    await until('a stream open', () => server.openStreams === 1);
    server.send('ADDED', session('a', 'ns1', '5'));
    await until('event a', () => events.includes('ADDED a'));

    const seen = failures();
    expect(seen.slice(0, 4).map((f) => f.attempt)).toEqual([1, 2, 3, 4]);
    expect(seen.every((f) => typeof f.error === 'string' && !String(f.error).includes('\n'))).toBe(true);
    expect(seen.every((f) => Number(f.retryInMs) <= FAST.maxMs)).toBe(true);
    expect(Number(seen[3]?.retryInMs)).toBeGreaterThan(Number(seen[0]?.retryInMs));
  });

  it('watches again after a connection reset mid-stream, an HTTP 410 and a 500, without a resourceVersion', async () => {
    server = new FakeWatchServer();
    await server.start();
    await startWatch(server.port);
    await until('a stream open', () => server.openStreams === 1);
    server.send('ADDED', session('a', 'ns1', '5'));
    await until('event a', () => events.includes('ADDED a'));

    server.answer({ kind: 'status', code: 410 }, { kind: 'status', code: 500 });
    server.resetConnections();
    await until('a stream open again', () => server.openStreams === 1 && server.requests.length === 4);
    server.send('MODIFIED', session('a', 'ns1', '9'));
    server.send('ADDED', session('b', 'ns1', '10'));
    await until('event b', () => events.includes('ADDED b'));

    expect(events).toEqual(['ADDED a', 'MODIFIED a', 'ADDED b']);
    expect(server.requests.map((r) => r.query.resourceVersion)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect(failures().map((f) => f.apiCode)).toEqual([undefined, 410, 500]);
    expect(failures().map((f) => f.attempt)).toEqual([1, 2, 3]);
  });

  it('treats an in-stream ERROR event (410 Gone) as a re-list: the stream is dropped and opened again', async () => {
    server = new FakeWatchServer();
    await server.start();
    server.answer({ kind: 'stream' }, { kind: 'error-event', code: 410 });
    await startWatch(server.port);
    await until('a stream open', () => server.openStreams === 1);
    server.send('ADDED', session('a', 'ns1', '5'));
    await until('event a', () => events.includes('ADDED a'));

    server.endStreams(); // a clean close: re-watch; that stream starts with ERROR 410
    await until('a third request', () => server.requests.length === 3);
    await until('one stream open', () => server.openStreams === 1);
    server.send('ADDED', session('a', 'ns1', '5'));
    await until('event a replayed', () => events.length === 2);

    expect(events).toEqual(['ADDED a', 'ADDED a']);
    expect(failures()).toEqual([
      expect.objectContaining({ attempt: 1, apiCode: 410, error: expect.stringContaining('Expired') }),
    ]);
    // the clean close was no failure: one debug line, no warn
    expect(logger.lines.filter((l) => l.level === 'debug')).toHaveLength(1);
  });

  it('close() aborts the open stream and opens no other', async () => {
    server = new FakeWatchServer();
    await server.start();
    await startWatch(server.port);
    await until('a stream open', () => server.openStreams === 1);
    watch?.close();
    await until('the stream closed', () => server.openStreams === 0);
    expect(server.requests).toHaveLength(1);
  });
});

describe('WATCH_BACKOFF', () => {
  it('starts at 200 ms and never exceeds 5 s, whatever the attempt count or jitter', () => {
    for (const random of [0, 0.5, 0.999999]) {
      const delays = Array.from({ length: 60 }, (_v, i) => backoffDelay(i + 1, WATCH_BACKOFF, () => random));
      expect(Math.max(...delays)).toBeLessThanOrEqual(5000);
      expect(delays[delays.length - 1]).toBeGreaterThanOrEqual(4000);
    }
    expect(backoffDelay(1, WATCH_BACKOFF, () => 0.5)).toBe(200);
  });
});

describe('RecoveringWatch on a stream without events (a namespace without sessions)', () => {
  it('counts attempts from 1 again after a stream that stayed open, and takes its clean close as the watch timeout', async () => {
    const server = new FakeWatchServer();
    await server.start();
    const port = server.port;
    await server.stop();
    const clock = { t: 1_000_000 };
    const logger = new MemoryLogger();
    const w = new k8s.Watch(kubeConfig(port));
    // Streams the client saw accepted (the answer's headers in): the watch times a stream from
    // there, so the test's clock moves only after it (the server counting a request is earlier).
    let accepted = 0;
    const watch = new RecoveringWatch({
      watch: (path, query, onLine, done) =>
        w.watch(path, query, onLine, done).then((request) => {
          accepted++;
          return request;
        }),
      path: PATH,
      logger,
      backoff: FAST,
      now: () => clock.t,
      onEvent: () => undefined,
    });
    const warnings = (): Array<Record<string, unknown>> =>
      logger.lines.filter((l) => l.level === 'warn').map((l) => l.fields ?? {});
    try {
      const started = watch.start();
      await until('three refused attempts', () => warnings().length >= 3);
      await server.start(port);
      await started;
      await until('a stream open', () => server.openStreams === 1);
      const before = warnings().length;
      clock.t += 31_000; // the stream stayed open (no events: nothing to watch)
      const acceptedBeforeReset = accepted;
      server.resetConnections();
      await until('the reset reported', () => warnings().length > before);
      expect(warnings()[before]?.attempt).toBe(1);

      await until('a stream open again', () => server.openStreams === 1 && accepted > acceptedBeforeReset);
      const warned = warnings().length;
      clock.t += 31_000;
      server.endStreams(); // the API server's watch timeout
      await until('a stream open once more', () => server.openStreams === 1 && server.requests.length === 3);
      expect(warnings()).toHaveLength(warned);
      expect(logger.lines.filter((l) => l.level === 'debug')).toHaveLength(1);
    } finally {
      watch.close();
      await server.stop();
    }
  });
});
