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

/**
 * What the index keeps of a session: its identity and spec.egress (watch.ts: whole objects of
 * 10,000 sessions and Pods did not fit the proxy's heap).
 */
export interface SessionView {
  readonly metadata: { namespace: string; name: string; uid: string; resourceVersion?: string };
  readonly spec: { readonly egress?: SandboxSession['spec']['egress'] };
}

/** What the index keeps of a sandbox Pod: its name, addresses, phase and controller reference. */
export interface PodView {
  readonly metadata: {
    namespace: string;
    name: string;
    resourceVersion?: string;
    deletionTimestamp?: Date;
    ownerReferences?: k8s.V1OwnerReference[];
  };
  readonly status: { readonly phase?: string; readonly podIPs?: ReadonlyArray<{ readonly ip: string }> };
}

/** The projection of a session (raw JSON or a model object); undefined without a name. */
export function sessionView(raw: unknown): SessionView | undefined {
  const s = raw as Partial<SandboxSession> | undefined;
  const m = s?.metadata;
  if (!m?.name) return undefined;
  const egress = s?.spec?.egress;
  return {
    metadata: {
      namespace: m.namespace ?? '',
      name: m.name,
      uid: m.uid ?? '',
      resourceVersion: m.resourceVersion,
    },
    spec: egress === undefined ? {} : { egress },
  };
}

/** The projection of a Pod: only its controller reference is kept (the one that can name a session). */
export function podView(raw: unknown): PodView | undefined {
  const p = raw as k8s.V1Pod | undefined;
  const m = p?.metadata;
  if (!m?.name) return undefined;
  const controller = m.ownerReferences?.find((r) => r.controller === true);
  const metadata: PodView['metadata'] = {
    namespace: m.namespace ?? '',
    name: m.name,
    resourceVersion: m.resourceVersion,
  };
  if (m.deletionTimestamp) metadata.deletionTimestamp = m.deletionTimestamp;
  if (controller) {
    const { apiVersion, kind, name, uid } = controller;
    metadata.ownerReferences = [{ apiVersion, kind, name, uid, controller: true }];
  }
  return { metadata, status: statusView(p?.status) };
}

function statusView(status: k8s.V1PodStatus | undefined): PodView['status'] {
  const podIPs = (status?.podIPs ?? []).flatMap((i) => (i.ip ? [{ ip: i.ip }] : []));
  return { phase: status?.phase, podIPs };
}

/** The session index. */
export class SessionIndex implements SessionResolver {
  private readonly sessions = new Map<string, SessionView>();
  private readonly podsByIp = new Map<string, Map<string, PodView>>();
  /** The addresses each Pod is indexed under, so that removing it touches only those. */
  private readonly ipsOfPod = new Map<string, readonly string[]>();
  /** Effective rules per session object: a changed session is a new object, so new rules. */
  private readonly effective = new WeakMap<SessionView, readonly EgressRule[]>();
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
            listPage: (limit, cont) =>
              custom.listNamespacedCustomObject({
                group: GROUP,
                version: VERSION,
                namespace,
                plural: PLURAL,
                limit,
                _continue: cont,
              }) as never,
            project: sessionView,
          },
          {
            upsert: (o) => this.upsertSession(o as unknown as SessionView),
            remove: (o) => this.removeSession(o as unknown as SessionView),
          },
          opts.log,
        ),
        new RestartingWatch<k8s.KubernetesObject>(
          opts.kc,
          {
            what: `sandbox pods ${namespace}`,
            path: `/api/v1/namespaces/${namespace}/pods`,
            listPage: (limit, cont) =>
              core.listNamespacedPod({ namespace, labelSelector: SANDBOX_PODS, limit, _continue: cont }),
            project: podView,
            labelSelector: SANDBOX_PODS,
          },
          {
            upsert: (o) => this.upsertPod(o as unknown as PodView),
            remove: (o) => this.removePod(o as unknown as PodView),
          },
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

  private upsertSession(s: SessionView): void {
    const id = `${s.metadata.namespace}/${s.metadata.name}`;
    const old = this.sessions.get(id);
    this.sessions.set(id, s);
    if (!old) return;
    if (!isDeepStrictEqual(old.spec.egress, s.spec.egress)) return this.opts.onRulesChanged(identity(s));
    // Same rules (a status update): the same array, so the proxy's cached decisions stay valid.
    const rules = this.effective.get(old);
    if (rules !== undefined) this.effective.set(s, rules);
  }

  private removeSession(s: SessionView): void {
    this.sessions.delete(`${s.metadata.namespace}/${s.metadata.name}`);
    this.opts.onRulesChanged(identity(s));
  }

  private upsertPod(p: PodView): void {
    this.removePod(p);
    const ips = (p.status?.podIPs ?? []).map((i) => i.ip).filter(Boolean);
    if (p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed' || p.metadata?.deletionTimestamp)
      return;
    const key = podKey(p);
    for (const ip of ips) {
      const byName = this.podsByIp.get(ip) ?? new Map<string, PodView>();
      byName.set(key, p);
      this.podsByIp.set(ip, byName);
    }
    if (ips.length > 0) this.ipsOfPod.set(key, ips);
  }

  private removePod(p: PodView): void {
    const key = podKey(p);
    for (const ip of this.ipsOfPod.get(key) ?? []) {
      const byName = this.podsByIp.get(ip);
      if (byName?.delete(key) && byName.size === 0) this.podsByIp.delete(ip);
    }
    this.ipsOfPod.delete(key);
  }

  byAddress(ip: string): SandboxIdentity | undefined {
    const pods = this.podsByIp.get(ip);
    // Two live Pods with one IP: the address is ambiguous, so it is nobody's.
    if (pods?.size !== 1) return undefined;
    const pod = pods.values().next().value!;
    const ns = pod.metadata?.namespace ?? '';
    const ref = pod.metadata?.ownerReferences?.find((r) => r.controller === true);
    const session = ref ? this.sessions.get(`${ns}/${ref.name}`) : undefined;
    if (!session) return undefined;
    const id = identity(session);
    return controlledBySession(ns, ref, id) ? id : undefined;
  }

  rules(s: SandboxIdentity): readonly EgressRule[] {
    const session = this.sessions.get(`${s.namespace}/${s.name}`);
    if (!session || session.metadata.uid !== s.uid) return NO_RULES;
    let rules = this.effective.get(session);
    if (rules === undefined) {
      const defaults = this.opts.defaults[s.namespace] ?? this.opts.defaults['*'] ?? [];
      rules = Object.freeze(effectiveRules(session.spec.egress, defaults));
      this.effective.set(session, rules);
    }
    return rules;
  }
}

const NO_RULES: readonly EgressRule[] = Object.freeze([]);

const podKey = (p: PodView): string => `${p.metadata?.namespace}/${p.metadata?.name}`;

function identity(s: SessionView): SandboxIdentity {
  return { namespace: s.metadata.namespace ?? '', name: s.metadata.name ?? '', uid: s.metadata.uid ?? '' };
}
