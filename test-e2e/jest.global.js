// Lets jest globalSetup/globalTeardown files (and the e2e reporter) run TypeScript modules of
// test-e2e/src/framework (see jest.ts-hooks.js for why Node needs help there). Jest calls the
// default export of the file it is given, so each entry point is its own small file:
// jest.integration.setup.js, jest.integration.teardown.js, jest.e2e.setup.js.
import { register } from 'node:module';

let registered = false;

/**
 * Imports a TypeScript module of src/framework and returns its default export.
 * @param {string} file file name under src/framework, e.g. "global-setup.ts"
 * @returns {Promise<(...args: unknown[]) => Promise<void>>}
 */
export async function importFrameworkDefault(file) {
  return (await importFrameworkModule(file)).default;
}

/**
 * Imports a TypeScript module of src/framework (e.g. for the e2e reporter, jest.e2e.reporter.js).
 * @param {string} file file name under src/framework, e.g. "e2e-summary.ts"
 * @returns {Promise<Record<string, any>>}
 */
export async function importFrameworkModule(file) {
  if (!registered) {
    register('./jest.ts-hooks.js', import.meta.url);
    registered = true;
  }
  return import(new URL(`./src/framework/${file}`, import.meta.url).href);
}
