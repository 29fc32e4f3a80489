// Lint guards the architecture (docs/adr/0002-lint-rules.md): no floating promises, small functions,
// no console in library code, type-only imports marked as such.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      '**/dist/**',
      '**/node_modules/**',
      '**/coverage/**',
      '.localkube/**',
      'crds/src/generated/**',
      '**/*.js',
      '**/*.mjs',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      // Each package's tsconfig.test.json covers its sources, tests, benches and specs (the
      // build tsconfig.json covers src only), so every linted file belongs to a program. The SDKs
      // come first: a file is typed by the first program that holds it, and test-e2e's program
      // also reaches the TypeScript SDK's sources without the DOM lib they are written against.
      parserOptions: {
        project: ['./sdk/*/tsconfig.test.json', './*/tsconfig.test.json'],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      complexity: ['error', 12],
      'max-depth': ['error', 3],
      'max-params': ['error', 4],
      'no-console': 'error',
    },
  },
  {
    // The operator's API boundary (ADR 0002): only kube/ and the composition root talk to the API
    // server; the rest of the operator sees Kubernetes objects as types and reaches the API through
    // the ports kube/ implements, so it stays testable against in-memory fakes.
    files: ['operator/src/**/*.ts'],
    ignores: ['operator/src/kube/**', 'operator/src/main.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: ['@kubernetes/client-node', '@dot-i/k8s-operator'].map((name) => ({
            name,
            message:
              'Only operator/src/kube/ and main.ts talk to the API server; import types only (import type).',
            allowTypeImports: true,
          })),
        },
      ],
    },
  },
  {
    // The published SDK has no dependencies (ADR 0036): it restates the public types, and
    // sdk/typescript/test/types/ checks them against @sandbox-platform/api at compile time.
    files: ['sdk/typescript/src/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: '@sandbox-platform/api',
              message: 'The SDK has no dependencies; check its types against the API in test/types/.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['**/test/**/*.ts', '**/specs/**/*.ts', '**/bench/**/*.ts', '**/scripts/**/*.ts'],
    rules: {
      'no-console': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
      complexity: 'off',
      'max-params': 'off',
    },
  },
);
