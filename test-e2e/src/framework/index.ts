/** Test framework: control-plane harness, cluster helpers, waitFor and predicates. */
// The helpers shared with other workspaces: @sandbox-platform/test-support.
export * from '@sandbox-platform/test-support';
export { e2eKubeconfig } from './e2e-setup.js';
export { kubectl } from './kubectl.js';
export type { KubectlResult } from './kubectl.js';
