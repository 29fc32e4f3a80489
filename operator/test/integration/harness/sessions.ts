/** SandboxSession and Pod helpers for the integration tests (the tests play kubelet and gateway). */
import * as k8s from '@kubernetes/client-node';
import {
  ANNOTATIONS,
  GROUP,
  PLURAL,
  VERSION,
  type SandboxSession,
  type SandboxSessionCondition,
  type SandboxSessionSpec,
} from '@sandbox-platform/api';

import { isNotFound, predicate, type Predicate, waitFor } from '@sandbox-platform/test-support';

const MERGE = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

/** Session CRUD through CustomObjectsApi. */
export class Sessions {
  constructor(
    private readonly custom: k8s.CustomObjectsApi,
    readonly namespace: string,
  ) {}

  private at(name: string): {
    group: string;
    version: string;
    plural: string;
    namespace: string;
    name: string;
  } {
    return { group: GROUP, version: VERSION, plural: PLURAL, namespace: this.namespace, name };
  }

  async create(
    name: string,
    spec: SandboxSessionSpec = {},
    annotations?: Record<string, string>,
  ): Promise<SandboxSession> {
    const body = {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: 'SandboxSession',
      metadata: { name, annotations },
      spec,
    };
    return (await this.custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: PLURAL,
      namespace: this.namespace,
      body,
    })) as SandboxSession;
  }

  async get(name: string): Promise<SandboxSession | undefined> {
    try {
      return (await this.custom.getNamespacedCustomObject(this.at(name))) as SandboxSession;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async delete(name: string): Promise<void> {
    await this.custom.deleteNamespacedCustomObject(this.at(name));
  }

  /** Sets spec.suspend (merge patch), as kubectl or the gateway's suspend and resume calls do. */
  async setSuspend(name: string, suspend: boolean): Promise<void> {
    await this.custom.patchNamespacedCustomObject({ ...this.at(name), body: { spec: { suspend } } }, MERGE);
  }

  /** Writes the activity annotation, as the gateway does. */
  async touch(name: string, at: Date = new Date()): Promise<void> {
    await this.custom.patchNamespacedCustomObject(
      {
        ...this.at(name),
        body: { metadata: { annotations: { [ANNOTATIONS.lastActivity]: at.toISOString() } } },
      },
      MERGE,
    );
  }

  /** Waits until the session satisfies `until` (undefined: it does not exist). */
  async waitFor(
    name: string,
    until: Predicate<SandboxSession | undefined>,
    timeoutMs = 30_000,
  ): Promise<SandboxSession | undefined> {
    return waitFor(() => this.get(name), until, { timeoutMs, intervalMs: 200 });
  }
}

/** The Ready condition of a session. */
export function ready(s: SandboxSession | undefined): SandboxSessionCondition | undefined {
  return s?.status?.conditions?.find((c) => c.type === 'Ready');
}

/** Predicate: Ready has this status (and reason, if given). */
export function readyIs(status: 'True' | 'False', reason?: string): Predicate<SandboxSession | undefined> {
  return predicate(`Ready=${status}${reason ? `/${reason}` : ''}`, (s) => {
    const c = ready(s);
    return c?.status === status && (reason === undefined || c.reason === reason);
  });
}

/** Predicate: the session does not exist. */
export const gone = predicate<SandboxSession | undefined>('session deleted', (s) => s === undefined);

/** Pod status writes, standing in for the kubelet the control-plane-only cluster lacks. */
export async function setPodStatus(
  core: k8s.CoreV1Api,
  namespace: string,
  name: string,
  status: k8s.V1PodStatus,
): Promise<void> {
  await core.patchNamespacedPodStatus({ namespace, name, body: { status } }, MERGE);
}

/** What a kubelet reports for a started, ready sandbox Pod. */
export function runningReady(ip = '198.18.0.10'): k8s.V1PodStatus {
  const now = new Date();
  return {
    phase: 'Running',
    podIP: ip,
    podIPs: [{ ip }],
    conditions: [
      { type: 'PodScheduled', status: 'True', lastTransitionTime: now },
      { type: 'Ready', status: 'True', lastTransitionTime: now },
      { type: 'ContainersReady', status: 'True', lastTransitionTime: now },
    ],
    containerStatuses: [
      {
        name: 'sandbox',
        ready: true,
        restartCount: 0,
        image: 'x',
        imageID: '',
        state: { running: { startedAt: now } },
      },
    ],
  };
}

/** Reads a Pod, undefined when absent. */
export async function readPod(
  core: k8s.CoreV1Api,
  namespace: string,
  name: string,
): Promise<k8s.V1Pod | undefined> {
  try {
    return await core.readNamespacedPod({ namespace, name });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** Reads a Secret, undefined when absent. */
export async function readSecret(
  core: k8s.CoreV1Api,
  namespace: string,
  name: string,
): Promise<k8s.V1Secret | undefined> {
  try {
    return await core.readNamespacedSecret({ namespace, name });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** Reasons of the Events recorded about a session. */
export async function eventReasons(
  core: k8s.CoreV1Api,
  namespace: string,
  session: string,
): Promise<string[]> {
  const list = await core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${session}` });
  // eventTime is a MicroTime, which client-node 1.4 hands back as a string.
  const when = (e: k8s.CoreV1Event): string => String(e.eventTime ?? e.firstTimestamp?.toISOString() ?? '');
  return list.items.sort((a, b) => when(a).localeCompare(when(b))).map((e) => e.reason ?? '');
}
