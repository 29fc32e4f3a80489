/**
 * The sandbox Pod cache of one namespace (sessions/pod-informer.ts) against a fake API server on
 * loopback (a LIST answer and a watch stream the test writes events to): it selects Pods by the
 * session label, caches projections only, keeps at most `maxPods`, and reports every change.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { NamespacePodWatch, type PodListPage } from '../../../src/sessions/pod-informer.js';
import type { PodRecord } from '../../../src/sessions/pod-record.js';

const quiet = { info: (): void => undefined, warn: (): void => undefined, debug: (): void => undefined };

function pod(name: string, rv: string, ip = '10.0.0.1'): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'ns',
      uid: `uid-${name}`,
      resourceVersion: rv,
      labels: { 'sandbox.dev/session': name },
      annotations: { bulk: 'x'.repeat(50_000) },
    },
    spec: { containers: [{ name: 'c', image: 'i' }] },
    status: { podIP: ip, conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

/** Waits until `cond` holds (fails after 5 s: what the test waits for, not how fast it comes). */
async function until(cond: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met within 5 s');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('NamespacePodWatch', () => {
  let server: http.Server;
  let url = '';
  const watchQueries: string[] = [];
  let stream: http.ServerResponse | undefined;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const q = new URL(req.url ?? '/', 'http://x').searchParams;
      if (q.get('watch') === 'true') {
        watchQueries.push(q.toString());
        res.writeHead(200, { 'content-type': 'application/json' });
        res.flushHeaders();
        stream = res;
        return;
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const kubeConfig = (): k8s.KubeConfig => {
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: url, skipTLSVerify: true }],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    return kc;
  };

  const event = (type: string, object: unknown): void => {
    stream!.write(JSON.stringify({ type, object }) + '\n');
  };

  it('lists by the session label, keeps projections up to the bound, follows the watch', async () => {
    const selectors: string[] = [];
    const list = (_ns: string, labelSelector: string): Promise<PodListPage> => {
      selectors.push(labelSelector);
      return Promise.resolve({
        metadata: { resourceVersion: '10' },
        items: ['a', 'b', 'c', 'd'].map((n) => pod(n, '5')),
      });
    };
    const changes: string[] = [];
    const cache = new NamespacePodWatch({ watch: kubeConfig(), list }, 'ns', {
      maxPods: 3,
      onChange: (p: PodRecord) => changes.push(p.metadata.name),
      log: quiet,
    });
    await cache.start();
    try {
      expect(cache.synced()).toBe(true);
      expect(selectors).toEqual(['sandbox.dev/session']);
      await until(() => stream !== undefined);
      expect(watchQueries[0]).toContain('labelSelector=sandbox.dev%2Fsession');
      // Four listed, three kept (the bound); only the projection is stored.
      expect(cache.size()).toBe(3);
      expect(cache.get('d')).toBeUndefined();
      expect(cache.get('a')).toEqual({
        metadata: { name: 'a', namespace: 'ns', uid: 'uid-a', resourceVersion: '5' },
        controller: undefined,
        podIPs: ['10.0.0.1'],
        ready: true,
        deleting: false,
        hostNetwork: false,
      });
      // Full: a new Pod is not cached; an update of a cached one is.
      event('ADDED', pod('e', '11'));
      event('MODIFIED', pod('a', '12', '10.0.0.2'));
      await until(() => cache.get('a')?.podIPs[0] === '10.0.0.2');
      expect(cache.get('e')).toBeUndefined();
      // A deletion frees a place.
      event('DELETED', pod('b', '13'));
      event('ADDED', pod('f', '14'));
      await until(() => cache.get('f') !== undefined);
      expect([cache.size(), cache.get('b')]).toEqual([3, undefined]);
      expect(changes).toEqual(['a', 'b', 'c', 'a', 'b', 'f']);
    } finally {
      await cache.stop();
    }
  });

  it('is not synced while its LIST fails, and says so', async () => {
    const list = (): Promise<PodListPage> => Promise.reject(new Error('forbidden: pods'));
    const warnings: string[] = [];
    const cache = new NamespacePodWatch({ watch: kubeConfig(), list }, 'ns', {
      maxPods: 10,
      onChange: () => undefined,
      log: { ...quiet, warn: (_o: unknown, msg?: string) => void warnings.push(msg ?? '') },
    });
    await cache.start();
    try {
      expect(cache.synced()).toBe(false);
      expect(warnings).toContain('pod watch failed; restarting');
    } finally {
      await cache.stop();
    }
  });
});
