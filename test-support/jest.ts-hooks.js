// Node module hooks that let jest's globalSetup/globalTeardown be TypeScript. Jest transforms the
// globalSetup file itself but hands its imports to Node, which neither maps NodeNext's "./x.js"
// specifiers to "./x.ts" nor understands TypeScript. These hooks do both (type-stripping only, via
// the TypeScript compiler already in devDependencies), for .ts files of this repository only.
// Registered by jest.global.js; test files themselves still go through ts-jest as usual.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import ts from 'typescript';

const repoRoot = new URL('../', import.meta.url).href;

/** Map a relative "./x.js" import from a repository .ts file to "./x.ts" when only that exists. */
export async function resolve(specifier, context, nextResolve) {
  const parent = context.parentURL ?? '';
  if (parent.startsWith(repoRoot) && parent.endsWith('.ts') && /^\.\.?\/.*\.js$/.test(specifier)) {
    const asJs = new URL(specifier, parent);
    const asTs = new URL(specifier.replace(/\.js$/, '.ts'), parent);
    if (!existsSync(fileURLToPath(asJs)) && existsSync(fileURLToPath(asTs))) {
      return { url: asTs.href, shortCircuit: true };
    }
  }
  // This package by name: its sources (the "source" export condition), so no `tsc -b` is needed first.
  if (specifier === '@sandbox-platform/test-support' && parent.startsWith(repoRoot)) {
    return nextResolve(specifier, { ...context, conditions: [...context.conditions, 'source'] });
  }
  return nextResolve(specifier, context);
}

/** Compile repository .ts files to ES modules (no type check: tsc and ts-jest do that). */
export async function load(url, context, nextLoad) {
  if (url.startsWith(repoRoot) && url.endsWith('.ts') && !url.includes('/node_modules/')) {
    const source = readFileSync(fileURLToPath(url), 'utf8');
    const out = ts.transpileModule(source, {
      fileName: fileURLToPath(url),
      compilerOptions: {
        module: ts.ModuleKind.ESNext,
        target: ts.ScriptTarget.ES2022,
        verbatimModuleSyntax: true,
        sourceMap: false,
        inlineSourceMap: true,
      },
    });
    return { format: 'module', source: out.outputText, shortCircuit: true };
  }
  return nextLoad(url, context);
}
