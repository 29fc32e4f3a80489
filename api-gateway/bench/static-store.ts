/**
 * The benchmarks' session store: a fixed set of Ready sessions pointing at local agents, and their
 * Pods as the gateway's Pod cache holds them (controlled by the session, Ready, with its IP), so the
 * Pod identity check runs its real lookups. Reads are the gateway's real read path against it;
 * writes are not part of any benchmark.
 */
import { API_VERSION, KIND, type SandboxSession } from '@sandbox-platform/api';

import type { PodRecord } from '../src/sessions/pod-record.js';
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

/** The Pod the operator would have made for a Ready session (what the Pod cache holds). */
export function podRecordOf(s: SandboxSession): PodRecord {
  const { name = '', namespace = '', uid = '' } = s.metadata;
  return {
    metadata: { name: s.status?.podName ?? '', namespace, uid: `pod-${uid}`, resourceVersion: '1' },
    controller: { apiVersion: API_VERSION, kind: KIND, name, uid },
    podIPs: s.status?.podIP ? [s.status.podIP] : [],
    ready: true,
    deleting: false,
    hostNetwork: false,
  };
}

/** A store of Ready sessions and their Pods; writes reject. */
export class StaticStore implements SessionStore {
  /** The Pods by namespace, then name (the Pod cache's shape). */
  private readonly pods = new Map<string, Map<string, PodRecord>>();

  constructor(private readonly sessions: readonly SandboxSession[]) {
    for (const s of sessions) {
      const pod = podRecordOf(s);
      const ns = this.pods.get(pod.metadata.namespace) ?? new Map<string, PodRecord>();
      ns.set(pod.metadata.name, pod);
      this.pods.set(pod.metadata.namespace, ns);
    }
  }
  synced(): boolean {
    return true;
  }
  podsSynced(): boolean {
    return true;
  }
  pod(namespace: string, name: string): PodRecord | undefined {
    return this.pods.get(namespace)?.get(name);
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
