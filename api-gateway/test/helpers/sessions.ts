/** SandboxSession fixtures (and their Pods, as the gateway caches them): builders plus modifiers. */
import { API_VERSION, KIND, type SandboxSession } from '@sandbox-platform/api';

import type { PodRecord } from '../../src/sessions/pod-record.js';

type Modifier = (s: SandboxSession) => void;

/** A session as the API server would return it right after creation (no status yet). */
export function session(name: string, namespace = 'team-a', ...mods: Modifier[]): SandboxSession {
  const s: SandboxSession = {
    apiVersion: 'sandbox.dev/v1alpha1',
    kind: 'SandboxSession',
    metadata: {
      name,
      namespace,
      uid: `uid-${name}`,
      creationTimestamp: '2030-01-01T00:00:00Z',
      resourceVersion: '1',
    },
    spec: {
      idleTimeoutSeconds: 1800,
      maxLifetimeSeconds: 86400,
      shutdownPolicy: 'Delete',
      execTransport: 'Agent',
    },
  };
  for (const m of mods) m(s);
  return s;
}

function condition(
  status: 'True' | 'False',
  reason: string,
  message = '',
): NonNullable<NonNullable<SandboxSession['status']>['conditions']>[number] {
  return { type: 'Ready', status, reason, message, lastTransitionTime: '2030-01-01T00:00:01Z' };
}

/** Ready with a pod IP. */
export const ready =
  (podIP = '10.0.0.7'): Modifier =>
  (s) => {
    s.status = {
      conditions: [condition('True', 'SandboxReady', 'ready')],
      podIP,
      podName: `sbs-${s.metadata.name}`,
    };
  };

/** Not Ready yet. */
export const pending =
  (reason = 'PodPending'): Modifier =>
  (s) => {
    s.status = { conditions: [condition('False', reason, 'pod is starting')] };
  };

/** Collected with shutdownPolicy Retain. */
export const collected =
  (reason: 'IdleTimeout' | 'LifetimeExceeded' = 'IdleTimeout'): Modifier =>
  (s) => {
    s.spec.shutdownPolicy = 'Retain';
    s.status = { conditions: [condition('False', reason, 'collected')] };
  };

/** Being deleted. */
export const deleting: Modifier = (s) => {
  s.metadata.deletionTimestamp = '2030-01-01T00:10:00Z';
};

/** Uses the KubernetesExec transport. */
export const kubeExec: Modifier = (s) => {
  s.spec.execTransport = 'KubernetesExec';
};

/** A specific uid. */
export const uid =
  (value: string): Modifier =>
  (s) => {
    s.metadata.uid = value;
  };

type Mutable<T> = { -readonly [K in keyof T]: T[K] };
type PodModifier = (p: Mutable<PodRecord>) => void;

/**
 * The Pod of a Ready session as the operator makes it and the gateway caches it: named in its
 * status, in its namespace, controlled by it (exact reference), Ready, with its status's pod IP.
 */
export function podOf(s: SandboxSession, ...mods: PodModifier[]): PodRecord {
  const namespace = s.metadata.namespace ?? '';
  const name = s.status?.podName ?? `sbs-${s.metadata.name}`;
  const pod: Mutable<PodRecord> = {
    metadata: { name, namespace, uid: `pod-uid-${name}`, resourceVersion: '1' },
    controller: { apiVersion: API_VERSION, kind: KIND, name: s.metadata.name, uid: s.metadata.uid },
    podIPs: s.status?.podIP ? [s.status.podIP] : [],
    ready: true,
    deleting: false,
    hostNetwork: false,
  };
  for (const m of mods) m(pod);
  return pod;
}
