/**
 * The Pod/Secret/pool informers (kube/owned-informer.ts) ride out the loss of the API server: a
 * real client-node ListWatch whose watch talks to a fake API server on 127.0.0.1 that resets its
 * connections and stops listening, then comes back (first with 410 Gone, which must re-list).
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';

import { OwnedInformer, type ListPage } from '../../../src/kube/owned-informer.js';
import { projectPod } from '../../../src/state/projections.js';
import type { PodView } from '../../../src/state/views.js';
import { MemoryLogger } from '../../fakes/fakes.js';
import { FakeWatchServer, until } from './fake-watch-server.js';

function pod(name: string, resourceVersion: string): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'ns1', uid: `uid-${name}`, resourceVersion },
    spec: {},
    status: { phase: 'Running' },
  };
}

describe('OwnedInformer across an API server outage', () => {
  let server: FakeWatchServer | undefined;
  let informer: OwnedInformer<PodView> | undefined;

  afterEach(async () => {
    await informer?.stop();
    await server?.stop();
  });

  it('restarts its watch from the last version after the server left, and re-lists after 410', async () => {
    server = new FakeWatchServer();
    await server.start();
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: `http://127.0.0.1:${server.port}`, skipTLSVerify: true }],
      users: [{ name: 'u', token: 'x' }],
      contexts: [{ name: 'c', cluster: 'c', user: 'u' }],
      currentContext: 'c',
    });
    let lists = 0;
    const listed = [pod('p1', '10')];
    const logger = new MemoryLogger();
    const changes: string[] = [];
    informer = new OwnedInformer<PodView>({
      kc,
      resource: 'pods',
      path: '/api/v1/namespaces/ns1/pods',
      labelSelector: 'app.kubernetes.io/managed-by=sandbox-operator',
      listPage: (): Promise<ListPage> => {
        lists++;
        return Promise.resolve({ items: listed, metadata: { resourceVersion: String(10 * lists) } });
      },
      project: projectPod,
      onChange: (view, change) => changes.push(`${change} ${view.metadata.name}`),
      logger,
      restartDelayMs: 5,
      maxRestartDelayMs: 40,
    });
    await informer.start();
    await until('a watch stream', () => server?.openStreams === 1);
    server.send('ADDED', pod('p2', '11'));
    await until('p2 seen', () => informer?.get('ns1', 'p2') !== undefined);

    await server.stop();
    const restarts = (): number =>
      logger.lines.filter((l) => l.message === 'informer stopped; restarting').length;
    await until('two restarts while nothing listens', () => restarts() >= 2);
    await server.start();
    await until('a watch stream again', () => server?.openStreams === 1);
    server.send('ADDED', pod('p3', '12'));
    await until('p3 seen', () => informer?.get('ns1', 'p3') !== undefined);
    // resumed from the last version seen, no second LIST
    expect(server.requests.map((r) => r.query.resourceVersion)).toEqual(['10', '11']);
    expect(lists).toBe(1);

    // 410 Gone on the next re-watch: a new LIST, then a watch from its version
    server.answer({ kind: 'status', code: 410 });
    server.resetConnections();
    await until('a watch after the re-list', () => lists === 2 && server?.openStreams === 1);
    expect(server.requests.slice(-2).map((r) => r.query.resourceVersion)).toEqual(['12', '20']);
    // p2 and p3 were not in the new LIST: deleted from the cache
    expect(changes.slice(-2).sort()).toEqual(['deleted p2', 'deleted p3']);
  });
});
