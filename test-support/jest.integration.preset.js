// The integration tier's jest config, shared by every workspace that has integration tests
// (operator, api-gateway, test-e2e). Their jest.integration.config.js is:
//
//   import { integrationPreset } from '@sandbox-platform/test-support/jest.integration.preset.js';
//   export default integrationPreset(import.meta.dirname);
//
// globalSetup starts a control-plane-only localkube (no kubelet: tests may patch pod status),
// applies crds/*.yaml and exports KUBECONFIG; set INTEGRATION_KUBECONFIG to use another cluster.
// The tests share one API server: one file at a time unless a workspace's files keep out of each
// other's way (opts.maxWorkers; the operator's: each file's operator watches only its namespace).
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { preset } from '../jest.preset.js';

const here = dirname(fileURLToPath(import.meta.url));

/**
 * @param {string} pkgDir absolute path of the workspace
 * @param {{ testTimeout?: number, maxWorkers?: number }} [opts]
 * @returns {import('jest').Config}
 */
export function integrationPreset(pkgDir, opts = {}) {
  return {
    ...preset(pkgDir, {
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      // API round trips plus controller reactions (GC, namespace deletion) take seconds.
      testTimeout: opts.testTimeout ?? 60_000,
    }),
    globalSetup: join(here, 'jest.integration.setup.js'),
    globalTeardown: join(here, 'jest.integration.teardown.js'),
    // One API server for the whole run: by default one file at a time.
    maxWorkers: opts.maxWorkers ?? 1,
  };
}
