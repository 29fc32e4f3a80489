// globalTeardown of the integration tier: src/global-teardown.ts.
import { importTsDefault } from './jest.global.js';

export default async function teardown(...args) {
  return (await importTsDefault(new URL('./src/global-teardown.ts', import.meta.url)))(...args);
}
