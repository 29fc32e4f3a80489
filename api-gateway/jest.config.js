import { preset } from '../jest.preset.js';

const base = preset(import.meta.dirname);

export default {
  ...base,
  moduleNameMapper: {
    // light-my-request (fastify inject) require()s the ESM-only cookie 2.x; see the shim's comment.
    '^cookie$': '<rootDir>/test/helpers/cjs/cookie-shim.js',
    ...base.moduleNameMapper,
  },
};
