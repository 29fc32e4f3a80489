/** SandboxSession fixtures: a builder plus modifiers. */
import type { SandboxSession } from '@sandbox-platform/api';

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
