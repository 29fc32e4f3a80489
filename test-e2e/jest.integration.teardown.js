// globalTeardown of the integration tier: src/framework/global-teardown.ts.
import { importFrameworkDefault } from './jest.global.js';

export default async function teardown(...args) {
  return (await importFrameworkDefault('global-teardown.ts'))(...args);
}
