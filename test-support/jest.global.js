// Lets jest globalSetup/globalTeardown files (and the e2e reporter) run TypeScript modules of the
// repository (see jest.ts-hooks.js for why Node needs help there). Jest calls the default export
// of the file it is given, so each entry point is its own small file: jest.integration.setup.js,
// jest.integration.teardown.js here, test-e2e/jest.e2e.setup.js.
import { register } from 'node:module';

let registered = false;

/**
 * Imports a TypeScript module of the repository and returns its default export.
 * @param {URL} url the .ts file, e.g. new URL('./src/global-setup.ts', import.meta.url)
 * @returns {Promise<(...args: unknown[]) => Promise<void>>}
 */
export async function importTsDefault(url) {
  return (await importTsModule(url)).default;
}

/**
 * Imports a TypeScript module of the repository (e.g. for the e2e reporter, jest.e2e.reporter.js).
 * @param {URL} url the .ts file
 * @returns {Promise<Record<string, any>>}
 */
export async function importTsModule(url) {
  if (!registered) {
    register('./jest.ts-hooks.js', import.meta.url);
    registered = true;
  }
  return import(url.href);
}
