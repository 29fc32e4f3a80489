/**
 * The chart's sandbox policy installed on the integration API server for one test file: rendered by
 * the pinned helm (`make tools`) exactly as installed (the ValidatingAdmissionPolicy with each
 * namespace's values in it, and its binding) and applied, in three sandbox namespaces:
 *
 * - `strict`: the chart's defaults (the default image only, gvisor, no node selector or
 *   toleration, 4 CPU / 8Gi, namespace default pools allowed);
 * - `open`: per-namespace overrides (more images, runc, a node label and two tolerations, 2 CPU /
 *   4Gi);
 * - `nodefault`: policy.namespaceDefaultPools false.
 */
import * as k8s from '@kubernetes/client-node';
import { expect } from '@jest/globals';
import { API_VERSION, GROUP, KIND, PLURAL, POOL_KIND, POOL_PLURAL, VERSION } from '@sandbox-platform/api';

import {
  createTestNamespace,
  kubeClients,
  kubectl,
  predicate,
  waitFor,
  type TestNamespace,
} from '../../../src/framework/index.js';
import { renderChart, renderKey } from './chart-render.js';

/** images.sandbox of the chart's defaults: always allowed. */
export const DEFAULT_IMAGE = 'localhost/sandbox-platform/sandbox-agent:dev';
export const A64 = 'sha256:' + 'a'.repeat(64);
export const B64 = 'sha256:' + 'b'.repeat(64);
/** The gateway's reading of an admission refusal (api-gateway/src/sessions/kube-errors.ts). */
const POLICY_DENIAL = /ValidatingAdmissionPolicy '([^']+)' with binding '([^']+)' denied request: ([\s\S]+)$/;

/** A session spec, or a pool template. */
export type Spec = Record<string, unknown>;
/** What admission answered. */
export type Outcome = { allowed: true } | { allowed: false; status: number; message: string };

/** The policy's own message of a refusal (what follows "denied request: "), failing when admitted. */
export function refusal(o: Outcome): { status: number; rule: string; full: string } {
  if (o.allowed) throw new Error('admitted, expected a refusal');
  return { status: o.status, rule: POLICY_DENIAL.exec(o.message)?.[3] ?? '', full: o.message };
}

/** The installed policy of one test file. */
export class PolicyEnv {
  readonly policy: string;
  private readonly kube = kubeClients();
  private seq = 0;

  private constructor(
    readonly release: string,
    readonly rel: TestNamespace,
    readonly strict: TestNamespace,
    readonly open: TestNamespace,
    readonly nodefault: TestNamespace,
  ) {
    this.policy = `${release}-sandbox-platform-sandbox-policy`;
  }

  /** Creates the namespaces, renders and applies the policy, and waits until each namespace enforces it. */
  static async install(release: string): Promise<PolicyEnv> {
    const { core } = kubeClients();
    const ns = (prefix: string): Promise<TestNamespace> => createTestNamespace(core, { prefix });
    const [rel, strict, open, nodefault] = await Promise.all([
      ns('policy-rel'),
      ns('strict'),
      ns('open'),
      ns('nodefault'),
    ]);
    const env = new PolicyEnv(release, rel, strict, open, nodefault);
    await env.apply();
    return env;
  }

  /**
   * Renders the policy (the open namespace's values replaced by `open` where given) and applies it,
   * as `helm upgrade` would; waits until every namespace refuses by its rules.
   */
  async apply(open: Record<string, unknown> = {}): Promise<void> {
    const manifest = renderChart({
      release: this.release,
      namespace: this.rel.name,
      values: this.values(open),
      showOnly: ['templates/sandbox-policy.yaml'],
    });
    const applied = await kubectl(['apply', '-f', '-'], { input: manifest });
    expect({ status: applied.status, stderr: applied.stderr }).toEqual({ status: 0, stderr: '' });
    // The API server compiles the policy and syncs the binding within moments: wait for the rule
    // itself (its message), not just any refusal by this policy.
    for (const n of [this.strict, this.open, this.nodefault]) {
      await waitFor(
        () => this.admit('session', n.name, { image: 'evil.io/x:1' }),
        predicate(
          `policy in force in ${n.name}`,
          (o) => !o.allowed && refusal(o).rule.startsWith('spec.image evil.io/x:1'),
        ),
        { timeoutMs: 30_000, intervalMs: 250 },
      );
    }
  }

  /** Removes the cluster-scoped policy and its binding (as `helm uninstall` would). */
  async removePolicy(): Promise<void> {
    await kubectl(['delete', '--ignore-not-found', 'validatingadmissionpolicybinding', this.policy]);
    await kubectl(['delete', '--ignore-not-found', 'validatingadmissionpolicy', this.policy]);
  }

  /** Removes the policy and the namespaces. */
  async uninstall(): Promise<void> {
    await this.removePolicy();
    await Promise.all([this.rel, this.strict, this.open, this.nodefault].map((n) => n.cleanup()));
  }

  /** The body of a session with this spec, or of a pool with it as template. */
  body(kind: 'session' | 'pool', ns: string, spec: Spec, namespaceDefault = false): object {
    const name = `${kind}-${++this.seq}`;
    if (kind === 'session')
      return { apiVersion: API_VERSION, kind: KIND, metadata: { name, namespace: ns }, spec };
    return {
      apiVersion: API_VERSION,
      kind: POOL_KIND,
      metadata: { name, namespace: ns },
      spec: { replicas: 0, namespaceDefault, template: spec },
    };
  }

  /** Creates the object as a server-side dry run: what admission answered. */
  async admit(
    kind: 'session' | 'pool',
    ns: string,
    spec: Spec,
    opts: { namespaceDefault?: boolean } = {},
  ): Promise<Outcome> {
    try {
      await this.kube.custom.createNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: ns,
        plural: kind === 'session' ? PLURAL : POOL_PLURAL,
        body: this.body(kind, ns, spec, opts.namespaceDefault),
        dryRun: 'All',
      });
      return { allowed: true };
    } catch (err) {
      if (!(err instanceof k8s.ApiException)) throw err;
      const message = (JSON.parse(String(err.body)) as { message?: string }).message ?? '';
      return { allowed: false, status: err.code, message };
    }
  }

  private values(open: Record<string, unknown>): Record<string, unknown> {
    return {
      sandboxNamespaces: [this.strict.name, this.open.name, this.nodefault.name],
      apiKeys: renderKey(this.strict.name),
      policy: {
        namespaces: {
          [this.open.name]: {
            images: [
              'registry.example.com/sandbox',
              'registry.example.com/team/*',
              'localhost:5000/tools/python:3.12',
              `ghcr.io/org/pinned@${A64}`,
            ],
            runtimeClasses: ['gvisor', 'runc'],
            nodeSelectors: ['pool=sandbox', 'topology.kubernetes.io/zone=*'],
            tolerations: [
              { key: 'sandbox.dev/dedicated', value: 'sandboxes', effect: 'NoSchedule' },
              { key: 'gpu', operator: 'Exists' },
            ],
            maxCpu: '2',
            maxMemory: '4Gi',
            ...open,
          },
          [this.nodefault.name]: { namespaceDefaultPools: false },
        },
      },
    };
  }
}
