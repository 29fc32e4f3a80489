// Builds bench/gateway.bench.ts and runs it with the arguments (../../bench-runner.mjs). Other
// packages stay external and resolve from node_modules, so the bundle is written under
// api-gateway/node_modules/.cache (api-gateway has its own ajv 8, the root's is ajv 6).
import { join } from 'node:path';

import { runBench } from '../../bench-runner.mjs';

await runBench(join(import.meta.dirname, 'gateway.bench.ts'), {
  dir: join(import.meta.dirname, '../node_modules/.cache'),
  external: true,
});
