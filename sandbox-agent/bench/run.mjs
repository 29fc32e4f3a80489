// Builds one benchmark of this package (bench/<name>.ts, default exec-roundtrip) and runs it with
// the remaining arguments (../../bench-runner.mjs):
//   node bench/run.mjs [exec-roundtrip | stream-throughput | code-engine] [args...]
// Packages stay external and resolve from node_modules (the agent's ws and ajv are CommonJS, and
// a bundle without a `require` cannot load their Node built-ins), so the bundle is written under
// sandbox-agent/node_modules/.cache (this package has its own ajv 8; the root's is ajv 6).
import { join } from 'node:path';

import { runBench } from '../../bench-runner.mjs';

const BENCHES = ['exec-roundtrip', 'stream-throughput', 'code-engine'];
const [first, ...rest] = process.argv.slice(2);
const named = BENCHES.includes(first);
await runBench(join(import.meta.dirname, `${named ? first : 'exec-roundtrip'}.ts`), {
  dir: join(import.meta.dirname, '../node_modules/.cache'),
  external: true,
  args: named ? rest : process.argv.slice(2),
});
