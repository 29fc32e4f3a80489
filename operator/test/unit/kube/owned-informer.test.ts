import { describe, expect, it, jest } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';

import { OwnedInformer } from '../../../src/kube/owned-informer.js';
import { projectPod } from '../../../src/state/projections.js';
import type { PodView } from '../../../src/state/views.js';
import { MemoryLogger } from '../../fakes/fakes.js';

describe('OwnedInformer', () => {
  it('backs off exponentially while its LIST is denied, instead of retrying every second', async () => {
    jest.useFakeTimers();
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://127.0.0.1:1', skipTLSVerify: false }],
      users: [{ name: 'u', token: 'x' }],
      contexts: [{ name: 'c', cluster: 'c', user: 'u' }],
      currentContext: 'c',
    });
    const logger = new MemoryLogger();
    const denied = Object.assign(new Error('pods is forbidden'), { code: 403, body: '{}' });
    const informer = new OwnedInformer<PodView>({
      kc,
      resource: 'pods',
      path: '/api/v1/namespaces/c/pods',
      labelSelector: 'a=b',
      listPage: () => Promise.reject(denied),
      project: projectPod,
      onChange: () => undefined,
      logger,
      restartDelayMs: 1000,
      maxRestartDelayMs: 8000,
    });
    try {
      void informer.start();
      for (let i = 0; i < 6; i++) await jest.advanceTimersByTimeAsync(10_000);
      const delays = logger.lines
        .filter((l) => l.message === 'informer stopped; restarting')
        .map((l) => l.fields?.delayMs);
      expect(delays.slice(0, 5)).toEqual([1000, 2000, 4000, 8000, 8000]);
    } finally {
      await informer.stop();
      jest.useRealTimers();
    }
  });
});
