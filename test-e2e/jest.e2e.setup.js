// globalSetup of the e2e tier: src/framework/e2e-setup.ts.
import { importTsDefault } from '@sandbox-platform/test-support/jest.global.js';

export default async function setup(...args) {
  return (await importTsDefault(new URL('./src/framework/e2e-setup.ts', import.meta.url)))(...args);
}
