import { spawn } from 'node:child_process';

import { localkubeBinary } from '@sandbox-platform/test-support';

/** Result of one kubectl run. */
export interface KubectlResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs kubectl of the cluster's Kubernetes version (`localkube kubectl`) against $KUBECONFIG,
 * with optional stdin. Never throws for a non-zero exit: tests assert on the result.
 */
export function kubectl(
  args: string[],
  opts: { input?: string; timeoutMs?: number } = {},
): Promise<KubectlResult> {
  const child = spawn(localkubeBinary(), ['kubectl', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(opts.input ?? '');
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
  return new Promise((resolve, reject) => {
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new Error('could not run localkube kubectl', { cause: err }));
    });
    child.once('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}
