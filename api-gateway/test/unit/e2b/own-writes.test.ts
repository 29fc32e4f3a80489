/**
 * The control API reads its own writes: setTimeout (and connect's extension) answers only once
 * the session store shows the patch, and getInfo computes the end from the spec while the
 * operator's status still describes the older one. Regression: the JS SDK's setTimeout then
 * getInfo answered the old end (291 s left right after a setTimeout of 600 s, on a fresh clone).
 */
import { describe, expect, it } from '@jest/globals';
import { ANNOTATIONS, type SandboxSession } from '@sandbox-platform/api';

import type { Principal } from '../../../src/auth/keys.js';
import type { SessionPolicy } from '../../../src/config.js';
import { endAt } from '../../../src/e2b/control/lifecycle.js';
import { E2bSandboxes, type SandboxesDeps } from '../../../src/e2b/control/sandboxes.js';
import { sandboxId } from '../../../src/e2b/ids.js';
import { session } from '../../helpers/sessions.js';

const POLICY: SessionPolicy = {
  maxEnvBytes: 1000,
  defaultIdleTimeoutSeconds: 1800,
  maxIdleTimeoutSeconds: 3600,
  maxLifetimeSeconds: 7200,
  allowedExecTransports: ['Agent'],
};
const NOW = Date.parse('2030-01-01T00:05:00Z');
const PRINCIPAL: Principal = { keyId: 'a', namespaces: new Set(['team-a']), defaultNamespace: 'team-a' };

/** A store that shows a write only when told (an informer behind the API server). */
class LaggingStore {
  private shown: SandboxSession;
  private readonly waiters: Array<() => void> = [];

  constructor(s: SandboxSession) {
    this.shown = s;
  }

  get(): SandboxSession {
    return this.shown;
  }

  show(s: SandboxSession): void {
    this.shown = s;
    for (const w of this.waiters.splice(0)) w();
  }

  waitForChange(_ns: string, _name: string, timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, timeoutMs);
      this.waiters.push(() => {
        clearTimeout(t);
        resolve();
      });
    });
  }
}

function fixture(): { sandboxes: E2bSandboxes; store: LaggingStore; written: SandboxSession[]; id: string } {
  const before = session('s', 'team-a', (x) => {
    x.metadata.creationTimestamp = '2030-01-01T00:00:00Z';
    x.metadata.generation = 1;
    x.spec.maxLifetimeSeconds = 600;
    x.spec.idleTimeoutSeconds = 600;
  });
  const store = new LaggingStore(before);
  const written: SandboxSession[] = [];
  const deps = {
    sessions: { get: () => Promise.resolve({}) },
    store,
    patcher: {
      setLifecycle: (
        _ns: string,
        _name: string,
        f: { idleTimeoutSeconds: number; maxLifetimeSeconds: number },
      ) => {
        const next = structuredClone(before);
        Object.assign(next.spec, f);
        next.metadata.generation = 2;
        next.metadata.annotations = { [ANNOTATIONS.lastActivity]: new Date(NOW).toISOString() };
        written.push(next);
        return Promise.resolve(next);
      },
    },
    policy: POLICY,
    maxWaitMs: 5000,
    now: () => NOW,
  } as unknown as SandboxesDeps;
  return {
    sandboxes: new E2bSandboxes(deps),
    store,
    written,
    id: sandboxId({ namespace: 'team-a', name: 's' }),
  };
}

describe('the E2B control API reads its own writes', () => {
  it('setTimeout answers after the store shows its patch, not before', async () => {
    const { sandboxes, store, written, id } = fixture();
    const order: string[] = [];
    const call = sandboxes.setTimeout(PRINCIPAL, id, 1200).then(() => order.push('answered'));
    for (let i = 0; i < 20 && written.length === 0; i++) await new Promise((r) => setImmediate(r));
    expect(written).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 20));
    order.push('store shows the patch');
    store.show(written[0]!);
    await call;
    expect(order).toEqual(['store shows the patch', 'answered']);
    expect(endAt(store.get(), NOW).getTime()).toBe(NOW + 1200 * 1000);
  });

  it("getInfo's end follows the spec while the operator's status is older than it", () => {
    const s = session('s', 'team-a', (x) => {
      x.metadata.creationTimestamp = '2030-01-01T00:00:00Z';
      x.metadata.generation = 2;
      x.metadata.annotations = { [ANNOTATIONS.lastActivity]: '2030-01-01T00:05:00Z' };
      x.spec.maxLifetimeSeconds = 1500;
      x.spec.idleTimeoutSeconds = 1200;
      x.status = { ...x.status, observedGeneration: 1, expiresAt: '2030-01-01T00:10:00Z' };
    });
    // Lifetime ends at 00:25, idle at 00:25: the spec's end, not the stale 00:10.
    expect(endAt(s, NOW).toISOString()).toBe('2030-01-01T00:25:00.000Z');
    s.status!.observedGeneration = 2;
    s.status!.expiresAt = '2030-01-01T00:24:59Z';
    expect(endAt(s, NOW).toISOString()).toBe('2030-01-01T00:24:59.000Z');
  });
});
