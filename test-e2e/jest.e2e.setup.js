// globalSetup of the e2e tier: src/framework/e2e-setup.ts.
import { importFrameworkDefault } from './jest.global.js';

export default async function setup(...args) {
  return (await importFrameworkDefault('e2e-setup.ts'))(...args);
}
