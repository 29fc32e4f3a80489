// The e2e tier: test-e2e/specs/**/*.e2e.test.ts against a whole cluster (`make test-e2e` starts
// the local one; E2E_KUBECONFIG points the specs at any other). Run with --runInBand.
import { join } from 'node:path';

import { preset } from '../jest.preset.js';

const base = preset(import.meta.dirname, {
  testMatch: ['<rootDir>/specs/**/*.e2e.test.ts'],
  // Pods start, probes pass, controllers react: seconds to a minute per spec.
  testTimeout: 180_000,
});

export default {
  ...base,
  globalSetup: join(import.meta.dirname, 'jest.e2e.setup.js'),
  // The summary at the end lists every test that did not run, with its reason (NOT RUN).
  reporters: ['default', join(import.meta.dirname, 'jest.e2e.reporter.js')],
  maxWorkers: 1,
};
