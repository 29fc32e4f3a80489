/**
 * LeaseStore on CoordinationV1Api. Times are written as V1MicroTime: the Lease's acquireTime and
 * renewTime are MicroTime fields (6 fractional digits); a plain Date would serialize with 3.
 * client-node 1.4 returns those fields as strings on read, so they are parsed here.
 */
import * as k8s from '@kubernetes/client-node';

import { ConflictError, isNotFound, is409 } from './errors.js';
import type { LeaseRecord, LeaseStore } from './leader-election.js';

/** The LeaseStore of one Lease. */
export function createLeaseStore(api: k8s.CoordinationV1Api, namespace: string, name: string): LeaseStore {
  return {
    get: async () => {
      try {
        return toRecord(await api.readNamespacedLease({ namespace, name }));
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    create: (record) =>
      conflicts(async () =>
        toRecord(await api.createNamespacedLease({ namespace, body: toLease(namespace, name, record) })),
      ),
    update: (record) =>
      conflicts(async () =>
        toRecord(
          await api.replaceNamespacedLease({ namespace, name, body: toLease(namespace, name, record) }),
        ),
      ),
  };
}

function toLease(namespace: string, name: string, r: LeaseRecord): k8s.V1Lease {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      namespace,
      name,
      resourceVersion: r.resourceVersion,
      labels: r.labels && { ...r.labels },
      annotations: r.annotations && { ...r.annotations },
    },
    spec: {
      holderIdentity: r.holderIdentity,
      leaseDurationSeconds: r.leaseDurationSeconds,
      acquireTime: r.acquireTime && new k8s.V1MicroTime(r.acquireTime.getTime()),
      renewTime: r.renewTime && new k8s.V1MicroTime(r.renewTime.getTime()),
      leaseTransitions: r.leaseTransitions,
    },
  };
}

function toRecord(lease: k8s.V1Lease): LeaseRecord {
  const spec = lease.spec ?? {};
  return {
    resourceVersion: lease.metadata?.resourceVersion,
    labels: lease.metadata?.labels,
    annotations: lease.metadata?.annotations,
    holderIdentity: spec.holderIdentity,
    leaseDurationSeconds: spec.leaseDurationSeconds,
    acquireTime: toDate(spec.acquireTime),
    renewTime: toDate(spec.renewTime),
    leaseTransitions: spec.leaseTransitions,
  };
}

function toDate(value: unknown): Date | undefined {
  if (value instanceof Date) return value;
  if (typeof value !== 'string') return undefined;
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? undefined : d;
}

async function conflicts(call: () => Promise<LeaseRecord>): Promise<LeaseRecord> {
  try {
    return await call();
  } catch (err) {
    if (is409(err)) throw new ConflictError('the Lease changed meanwhile', { cause: err });
    throw err;
  }
}
