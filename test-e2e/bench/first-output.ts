/**
 * What the session benches time to: the first stdout chunk of a streamed `echo first` through the
 * gateway (which waits for the session to be Ready). Shared by bench-resume and bench-snapshot.
 */
import type { SandboxClient } from '../../sdk/typescript/src/index.js';

/** Milliseconds from t0 (process.hrtime.bigint()) to the first stdout chunk of `echo first`. */
export async function firstOutput(sbx: SandboxClient, name: string, t0: bigint): Promise<number> {
  for await (const ev of sbx.execStream(name, {
    command: 'echo first',
    timeoutSeconds: 30,
    waitSeconds: 120,
  })) {
    if (ev.type === 'stdout') return Number(process.hrtime.bigint() - t0) / 1e6;
    if (ev.type === 'exit') throw new Error(`${name}: exit ${ev.exitCode} before any output`);
  }
  throw new Error(`${name}: the stream ended without output`);
}
