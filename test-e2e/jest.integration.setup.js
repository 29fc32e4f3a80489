// globalSetup of the integration tier: src/framework/global-setup.ts.
import { importFrameworkDefault } from './jest.global.js';

export default async function setup(...args) {
  return (await importFrameworkDefault('global-setup.ts'))(...args);
}
