import { randomBytes } from 'node:crypto';

import type * as k8s from '@kubernetes/client-node';

import { isNotFound } from './kube.js';
import { predicate, waitFor } from './wait-for.js';

/** Label on every namespace the tests create, so leftovers can be found and removed. */
export const TEST_NAMESPACE_LABEL = 'sandbox.dev/test-namespace';

/** A namespace owned by one test. */
export interface TestNamespace {
  name: string;
  /** Deletes the namespace; with `wait`, until it is gone (the namespace controller finished). */
  cleanup(opts?: { wait?: boolean; timeoutMs?: number }): Promise<void>;
}

/** Options of {@link createTestNamespace}. */
export interface TestNamespaceOptions {
  /** name prefix (default "t"); a random suffix makes the name unique. */
  prefix?: string;
  /** the exact name, e.g. from {@link testNamespaceName} when it must be known beforehand; overrides prefix. */
  name?: string;
  /** extra labels, e.g. pod-security.kubernetes.io/enforce=restricted. */
  labels?: Record<string, string>;
}

/** A unique test namespace name: the prefix and a random suffix. */
export function testNamespaceName(prefix = 't'): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

/** Creates a uniquely named namespace for one test. Call `cleanup()` in afterEach/afterAll. */
export async function createTestNamespace(
  core: k8s.CoreV1Api,
  opts: TestNamespaceOptions = {},
): Promise<TestNamespace> {
  const name = opts.name ?? testNamespaceName(opts.prefix);
  await core.createNamespace({
    body: { metadata: { name, labels: { [TEST_NAMESPACE_LABEL]: 'true', ...opts.labels } } },
  });
  return {
    name,
    async cleanup({ wait = false, timeoutMs = 60_000 } = {}): Promise<void> {
      try {
        await core.deleteNamespace({ name });
      } catch (err) {
        if (!isNotFound(err)) throw new Error(`delete namespace ${name}`, { cause: err });
      }
      if (!wait) return;
      await waitFor(
        async () => {
          try {
            await core.readNamespace({ name });
            return false;
          } catch (err) {
            if (isNotFound(err)) return true;
            throw err;
          }
        },
        predicate(`namespace ${name} to be deleted`, (gone: boolean) => gone),
        { timeoutMs },
      );
    },
  };
}
