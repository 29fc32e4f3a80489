import { preset } from '../../jest.preset.js';

// The CLI's tests run against the SDK's sources (the preset maps @sandbox-platform/client), as its
// bundle does (scripts/bundle.mjs).
export default preset(import.meta.dirname);
