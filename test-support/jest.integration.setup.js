// globalSetup of the integration tier: src/global-setup.ts.
import { importTsDefault } from './jest.global.js';

export default async function setup(...args) {
  return (await importTsDefault(new URL('./src/global-setup.ts', import.meta.url)))(...args);
}
