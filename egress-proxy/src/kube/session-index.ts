/**
 * The proxy's view of the sandbox namespaces: SandboxSessions (for spec.egress) and sandbox Pods
 * (for their IPs), each from a watch per namespace. A source address is a session's only when the
 * Pod with that IP is running and belongs exactly to it (crds/src/ownership.ts): labels prove
 * nothing, and a Pod a tenant planted with a forged reference maps to no session.
 */
import * as k8s from '@kubernetes/client-node';
import { controlledBySession, GROUP, PLURAL, VERSION, type SandboxSession } from '@sandbox-platform/api';
import { isDeepStrictEqual } from 'node:util';

import { effectiveRules, type EgressRule } from '../rules.js';
import type { SandboxIdentity, SessionResolver } from '../sessions.js';
import { RestartingWatch, type Log } from './watch.js';

/** Options of the index. */
export interface SessionIndexOptions {
  kc: k8s.KubeConfig;
  namespaces: readonly string[];
  /** Namespace defaults: per namespace, else "*" (chart egressProxy.defaults / namespaces). */
  defaults: Readonly<Record<string, readonly EgressRule[]>>;
  /** Called when a session's spec.egress changed (the proxy re-checks its open tunnels). */
  onRulesChanged: (s: SandboxIdentity) => void;
  log: Log;
}

/** Label selector of sandbox Pods (the chart's NetworkPolicies select the same). */
const SANDBOX_PODS = 'app.kubernetes.io/component=sandbox,app.kubernetes.io/managed-by=sandbox-operator';

/** The session index. */
export class SessionIndex implements SessionResolver {
  private readonly sessions = new Map<string, SandboxSession>();
  private readonly podsByIp = new Map<string, Map<string, k8s.V1Pod>>();
  private readonly watches: Array<RestartingWatch<k8s.KubernetesObject>> = [];

  constructor(private readonly opts: SessionIndexOptions) {
    const custom = opts.kc.makeApiClient(k8s.CustomObjectsApi);
    const core = opts.kc.makeApiClient(k8s.CoreV1Api);
    for (const namespace of opts.namespaces) {
      this.watches.push(
        new RestartingWatch<k8s.KubernetesObject>(
          opts.kc,
          {
            what: `sandboxsessions ${namespace}`,
            path: `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${PLURAL}`,
            list: () =>
              custom.listNamespacedCustomObject({
                group: GROUP,
                version: VERSION,
                namespace,
                plural: PLURAL,
              }) as never,
          },
          {
            upsert: (o) => this.upsertSession(o as SandboxSession),
            remove: (o) => this.removeSession(o as SandboxSession),
          },
          opts.log,
        ),
        new RestartingWatch<k8s.KubernetesObject>(
          opts.kc,
          {
            what: `sandbox pods ${namespace}`,
            path: `/api/v1/namespaces/${namespace}/pods`,
            list: () => core.listNamespacedPod({ namespace, labelSelector: SANDBOX_PODS }),
            labelSelector: SANDBOX_PODS,
          },
          { upsert: (o) => this.upsertPod(o), remove: (o) => this.removePod(o) },
          opts.log,
        ),
      );
    }
  }

  async start(): Promise<void> {
    await Promise.all(this.watches.map((w) => w.start()));
  }

  async stop(): Promise<void> {
    await Promise.all(this.watches.map((w) => w.stop()));
  }

  synced(): boolean {
    return this.watches.every((w) => w.synced());
  }

  private upsertSession(s: SandboxSession): void {
    const id = `${s.metadata.namespace}/${s.metadata.name}`;
    const old = this.sessions.get(id);
    this.sessions.set(id, s);
    if (old && !isDeepStrictEqual(old.spec.egress, s.spec.egress)) this.opts.onRulesChanged(identity(s));
  }

  private removeSession(s: SandboxSession): void {
    this.sessions.delete(`${s.metadata.namespace}/${s.metadata.name}`);
    this.opts.onRulesChanged(identity(s));
  }

  private upsertPod(p: k8s.V1Pod): void {
    this.removePod(p);
    const ips = (p.status?.podIPs ?? []).map((i) => i.ip).filter(Boolean);
    if (p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed' || p.metadata?.deletionTimestamp)
      return;
    for (const ip of ips) {
      const byName = this.podsByIp.get(ip) ?? new Map<string, k8s.V1Pod>();
      byName.set(podKey(p), p);
      this.podsByIp.set(ip, byName);
    }
  }

  private removePod(p: k8s.V1Pod): void {
    for (const [ip, byName] of this.podsByIp) {
      if (byName.delete(podKey(p)) && byName.size === 0) this.podsByIp.delete(ip);
    }
  }

  byAddress(ip: string): SandboxIdentity | undefined {
    const pods = [...(this.podsByIp.get(ip)?.values() ?? [])];
    // Two live Pods with one IP: the address is ambiguous, so it is nobody's.
    if (pods.length !== 1) return undefined;
    const pod = pods[0]!;
    const ns = pod.metadata?.namespace ?? '';
    const ref = pod.metadata?.ownerReferences?.find((r) => r.controller === true);
    const session = ref ? this.sessions.get(`${ns}/${ref.name}`) : undefined;
    if (!session) return undefined;
    const id = identity(session);
    return controlledBySession(ns, ref, id) ? id : undefined;
  }

  rules(s: SandboxIdentity): readonly EgressRule[] {
    const session = this.sessions.get(`${s.namespace}/${s.name}`);
    if (!session || session.metadata.uid !== s.uid) return [];
    const defaults = this.opts.defaults[s.namespace] ?? this.opts.defaults['*'] ?? [];
    return effectiveRules(session.spec.egress, defaults);
  }
}

const podKey = (p: k8s.V1Pod): string => `${p.metadata?.namespace}/${p.metadata?.name}`;

function identity(s: SandboxSession): SandboxIdentity {
  return { namespace: s.metadata.namespace ?? '', name: s.metadata.name ?? '', uid: s.metadata.uid ?? '' };
}
