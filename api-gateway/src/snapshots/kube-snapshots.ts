/**
 * SandboxSnapshots through the API server (docs/snapshots.md): create, read, list and delete, in
 * one namespace the caller's key may use (the services resolve it), each call with the gateway's
 * Kubernetes deadline. Snapshots are few and read on demand: no informer. Failures map to
 * problems as for sessions (kube-errors.ts), a missing snapshot to undefined/false.
 */
import type * as k8s from '@kubernetes/client-node';
import { GROUP, SNAPSHOT_KIND, SNAPSHOT_PLURAL, VERSION, type SandboxSnapshot } from '@sandbox-platform/api';

import { makeCustomObjectsApi } from '../sessions/kube-api.js';
import { apiStatus, kubeFailure } from '../sessions/kube-errors.js';

/** The calls (a narrow port: unit tests use a fake). */
export interface SnapshotApi {
  create(namespace: string, snapshot: SandboxSnapshot): Promise<SandboxSnapshot>;
  get(namespace: string, name: string): Promise<SandboxSnapshot | undefined>;
  list(namespace: string): Promise<SandboxSnapshot[]>;
  /** False when it did not exist. */
  delete(namespace: string, name: string): Promise<boolean>;
}

/** The API server's client. */
export class KubeSnapshotApi implements SnapshotApi {
  private readonly custom: k8s.CustomObjectsApi;

  constructor(kc: k8s.KubeConfig, timeoutMs: number) {
    this.custom = makeCustomObjectsApi(kc, timeoutMs);
  }

  async create(namespace: string, snapshot: SandboxSnapshot): Promise<SandboxSnapshot> {
    try {
      return (await this.custom.createNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: SNAPSHOT_PLURAL,
        body: { apiVersion: `${GROUP}/${VERSION}`, kind: SNAPSHOT_KIND, ...snapshot },
      })) as SandboxSnapshot;
    } catch (err) {
      throw kubeFailure(err, 'create snapshot');
    }
  }

  async get(namespace: string, name: string): Promise<SandboxSnapshot | undefined> {
    try {
      return (await this.custom.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: SNAPSHOT_PLURAL,
        name,
      })) as SandboxSnapshot;
    } catch (err) {
      if (apiStatus(err) === 404) return undefined;
      throw kubeFailure(err, 'read snapshot');
    }
  }

  async list(namespace: string): Promise<SandboxSnapshot[]> {
    try {
      const list = (await this.custom.listNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: SNAPSHOT_PLURAL,
      })) as { items?: SandboxSnapshot[] };
      return list.items ?? [];
    } catch (err) {
      throw kubeFailure(err, 'list snapshots');
    }
  }

  async delete(namespace: string, name: string): Promise<boolean> {
    try {
      await this.custom.deleteNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: SNAPSHOT_PLURAL,
        name,
      });
      return true;
    } catch (err) {
      if (apiStatus(err) === 404) return false;
      throw kubeFailure(err, 'delete snapshot');
    }
  }
}
