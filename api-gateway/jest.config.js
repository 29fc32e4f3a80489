import { preset } from '../jest.preset.js';

const base = preset(import.meta.dirname);

export default {
  ...base,
  moduleNameMapper: {
    // light-my-request (fastify inject) require()s the ESM-only cookie 2.x; see the shim's comment.
    '^cookie$': '<rootDir>/test/helpers/cjs/cookie-shim.js',
    ...base.moduleNameMapper,
  },
  // Two workers, not jest's default of cores - 1 (one here): the gateway's 76 unit files are
  // in-process fastify apps that wait on sockets and timers as much as they compute; on 2 cores
  // the tier went from 279 s (one worker, clean-clone CI of 2026-12-06) to 178 s.
  maxWorkers: 2,
};
