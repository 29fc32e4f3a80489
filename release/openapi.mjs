// Writes the gateway's OpenAPI document, api-gateway/openapi.json, from the same route schemas the
// gateway validates with and serves at GET /openapi.json (api-gateway/src/plugins/openapi.ts): the
// app is built with empty stand-ins behind its ports (no cluster, no listener, no request made)
// and asked for its document. Limits inside the schemas are the configuration's defaults, the
// ones the chart's defaults give.
//
//   node release/openapi.mjs           write api-gateway/openapi.json (make generate)
//   node release/openapi.mjs --check   fail when the committed document drifted (make verify)
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { build } from 'esbuild';
import * as prettier from 'prettier';

const root = join(import.meta.dirname, '..');
const target = join(root, 'api-gateway/openapi.json');

/** Bundles the gateway's app, config, logger and keys (its dependencies stay in node_modules). */
async function loadGateway() {
  // Inside api-gateway/, so its dependencies resolve as they do for the gateway itself.
  mkdirSync(join(root, 'api-gateway/node_modules/.cache'), { recursive: true });
  const dir = mkdtempSync(join(root, 'api-gateway/node_modules/.cache/openapi-'));
  const outfile = join(dir, 'gateway.mjs');
  try {
    await build({
      stdin: {
        contents: [
          "export { buildApp } from './api-gateway/src/app.ts';",
          "export { loadConfig } from './api-gateway/src/config.ts';",
          "export { ApiKeys } from './api-gateway/src/auth/keys.ts';",
          "export { WinstonFastifyLogger, silentWinston } from './api-gateway/src/logger.ts';",
        ].join('\n'),
        resolveDir: root,
        loader: 'ts',
      },
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      outfile,
      packages: 'external',
      logLevel: 'warning',
      alias: { '@sandbox-platform/api': join(root, 'crds/src/index.ts') },
    });
    return await import(outfile);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function openApiDocument() {
  const gw = await loadGateway();
  const namespaces = ['default'];
  const config = gw.loadConfig({
    GATEWAY_API_KEYS_FILE: '/dev/null',
    SANDBOX_MASTER_KEY_FILE: '/dev/null',
    GATEWAY_NAMESPACES: namespaces.join(','),
  });
  const keys = gw.ApiKeys.parse(
    JSON.stringify({ keys: [{ id: 'doc', key: 'x'.repeat(32), namespaces }] }),
    namespaces,
  );
  const app = await gw.buildApp({
    config,
    logger: new gw.WinstonFastifyLogger(gw.silentWinston()),
    keys,
    store: {},
    transports: { Agent: {}, KubernetesExec: {} },
    activity: {},
  });
  try {
    await app.ready();
    return app.openApiDocument();
  } finally {
    await app.close();
  }
}

const doc = await openApiDocument();
const options = (await prettier.resolveConfig(target)) ?? {};
const text = await prettier.format(JSON.stringify(doc), { ...options, parser: 'json' });
const paths = Object.keys(doc.paths).length;
if (process.argv.includes('--check')) {
  let committed = '';
  try {
    committed = readFileSync(target, 'utf8');
  } catch {
    // missing: drifted
  }
  if (committed !== text) {
    console.error("api-gateway/openapi.json drifted from the gateway's route schemas: run make generate");
    process.exit(1);
  }
  console.log(`api-gateway/openapi.json: up to date (${paths} paths, version ${doc.info.version})`);
} else {
  writeFileSync(target, text);
  console.log(`wrote api-gateway/openapi.json (${paths} paths, version ${doc.info.version})`);
}
