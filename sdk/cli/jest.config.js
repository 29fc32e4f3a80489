import { join } from 'node:path';

import { preset } from '../../jest.preset.js';

const base = preset(import.meta.dirname);

export default {
  ...base,
  moduleNameMapper: {
    // The CLI's tests run against the SDK's sources, as its bundle does (scripts/bundle.mjs).
    '^@sandbox-platform/client$': join(import.meta.dirname, '../typescript/src/index.ts'),
    ...base.moduleNameMapper,
  },
};
