// Shared jest settings for every workspace. The packages are ESM (see docs/adr/0001-module-system.md):
// jest runs under `node --experimental-vm-modules` and ts-jest compiles TypeScript as ESM.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(fileURLToPath(import.meta.url));

/**
 * @param {string} pkgDir absolute path of the workspace
 * @param {{ testMatch?: string[], testTimeout?: number }} [opts]
 * @returns {import('jest').Config}
 */
export function preset(pkgDir, opts = {}) {
  return {
    rootDir: pkgDir,
    testEnvironment: 'node',
    extensionsToTreatAsEsm: ['.ts'],
    testMatch: opts.testMatch ?? ['<rootDir>/test/unit/**/*.test.ts'],
    testTimeout: opts.testTimeout ?? 10_000,
    moduleNameMapper: {
      // Workspaces import each other by package name; tests use the TypeScript sources directly.
      '^@sandbox-platform/api$': join(root, 'crds/src/index.ts'),
      '^@sandbox-platform/api/(.*)\\.js$': join(root, 'crds/src/$1.ts'),
      '^@sandbox-platform/test-support$': join(root, 'test-support/src/index.ts'),
      '^@sandbox-platform/test-support/gateway$': join(root, 'test-support/gateway/gateway-env.ts'),
      // The gateway's and the e2e tier's tests call the gateway through the published SDK's sources.
      '^@sandbox-platform/client$': join(root, 'sdk/typescript/src/index.ts'),
      // NodeNext requires explicit .js extensions in relative imports; map them back to the .ts sources.
      '^(\\.{1,2}/.*)\\.js$': '$1',
    },
    transform: {
      '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: join(pkgDir, 'tsconfig.test.json') }],
    },
  };
}
