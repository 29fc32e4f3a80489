/**
 * The benchmarks' session store: a fixed set of Ready sessions pointing at local agents. Reads are
 * the gateway's real read path against it; writes are not part of any benchmark.
 */
import type { SandboxSession } from '@sandbox-platform/api';

import type { CreateResult, SessionStore, Tombstone } from '../src/sessions/store.js';

/** A Ready session whose pod IP is `podIP`. */
export function readySession(namespace: string, name: string, uid: string, podIP: string): SandboxSession {
  return {
    metadata: { name, namespace, uid },
    spec: { idleTimeoutSeconds: 1800 },
    status: {
      podIP,
      podName: `sbs-${name}`,
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'SandboxReady',
          message: '',
          lastTransitionTime: new Date().toISOString(),
        },
      ],
    },
  };
}

/** A store of Ready sessions; writes reject. */
export class StaticStore implements SessionStore {
  constructor(private readonly sessions: readonly SandboxSession[]) {}
  synced(): boolean {
    return true;
  }
  get(namespace: string, name: string): SandboxSession | undefined {
    return this.sessions.find((s) => s.metadata.namespace === namespace && s.metadata.name === name);
  }
  list(namespace: string): SandboxSession[] {
    return this.sessions.filter((s) => s.metadata.namespace === namespace);
  }
  tombstone(): Tombstone | undefined {
    return undefined;
  }
  readFresh(namespace: string, name: string): Promise<SandboxSession | undefined> {
    return Promise.resolve(this.get(namespace, name));
  }
  waitForChange(): Promise<void> {
    return Promise.resolve();
  }
  createOrGet(): Promise<CreateResult> {
    return Promise.reject(new Error('not in the benchmark'));
  }
  delete(): Promise<boolean> {
    return Promise.reject(new Error('not in the benchmark'));
  }
  setSuspended(): Promise<SandboxSession | undefined> {
    return Promise.reject(new Error('not in the benchmark'));
  }
}
