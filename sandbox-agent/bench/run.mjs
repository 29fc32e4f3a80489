// Builds bench/exec-roundtrip.ts (every package bundled, in the OS temp dir) and runs it with the
// arguments (../../bench-runner.mjs).
import { join } from 'node:path';

import { runBench } from '../../bench-runner.mjs';

await runBench(join(import.meta.dirname, 'exec-roundtrip.ts'));
