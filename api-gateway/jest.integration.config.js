import { integrationPreset } from '@sandbox-platform/test-support/jest.integration.preset.js';

const base = integrationPreset(import.meta.dirname, { testTimeout: 90_000 });

export default {
  ...base,
  moduleNameMapper: {
    // light-my-request (fastify inject) require()s the ESM-only cookie 2.x; see the shim's comment.
    '^cookie$': '<rootDir>/test/helpers/cjs/cookie-shim.js',
    ...base.moduleNameMapper,
  },
};
