/**
 * e2e: the api-gateway on a real node. Two sessions on the sandbox-agent image, one with
 * execTransport Agent (HTTP to the in-pod agent) and one with KubernetesExec (pods/exec through
 * the API server), run the same commands through the gateway and must return the same stdout,
 * stderr and exit code; files and streaming exec work on both.
 *
 * Needs the platform deployed (operator and gateway) and, from the e2e setup:
 *   E2E_GATEWAY_URL       base URL of the gateway, reachable from the test process
 *   E2E_GATEWAY_API_KEY   an API key allowed to use E2E_NAMESPACE
 *   E2E_NAMESPACE         the namespace of the sessions (default sandbox-e2e)
 */
import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { SandboxClient, type ExecResult, type ExecStreamEvent, type Session } from '@sandbox-platform/client';
import { kubeClients } from '../../src/framework/index.js';
import { predicate, waitFor } from '@sandbox-platform/test-support';
import { runtimesUnderTest } from '../isolation/runtimes.js';
import { createSession } from '../isolation/support.js';

const NAMESPACE = process.env.E2E_NAMESPACE ?? 'sandbox-e2e';
const IMAGE = 'localhost/sandbox-platform/sandbox-agent:dev';
const READY_TIMEOUT_MS = 180_000;

function gatewayClient(): SandboxClient {
  const baseUrl = process.env.E2E_GATEWAY_URL;
  const apiKey = process.env.E2E_GATEWAY_API_KEY;
  if (!baseUrl || !apiKey) {
    throw new Error(
      'e2e gateway specs need E2E_GATEWAY_URL and E2E_GATEWAY_API_KEY from the e2e setup (a deployed api-gateway)',
    );
  }
  return new SandboxClient({ baseUrl, apiKey, namespace: NAMESPACE, retry: { retries: 0 } });
}

/** The fields both transports must agree on. */
function comparable(
  r: ExecResult,
): Pick<
  ExecResult,
  'stdout' | 'stderr' | 'exitCode' | 'stdoutEncoding' | 'stderrEncoding' | 'truncated' | 'timedOut'
> {
  const { stdout, stderr, exitCode, stdoutEncoding, stderrEncoding, truncated, timedOut } = r;
  return { stdout, stderr, exitCode, stdoutEncoding, stderrEncoding, truncated, timedOut };
}

/** Concatenated stream output and the exit event. */
async function collect(
  events: AsyncGenerator<ExecStreamEvent>,
): Promise<{ stdout: string; stderr: string; exitCode: number }> {
  const out = { stdout: '', stderr: '', exitCode: -1 };
  for await (const ev of events) {
    if (ev.type === 'exit') out.exitCode = ev.exitCode;
    else
      out[ev.type] += ev.encoding === 'utf-8' ? ev.data : Buffer.from(ev.data, 'base64').toString('latin1');
  }
  return out;
}

const RUNTIMES = await runtimesUnderTest(kubeClients().kc);

describe.each(RUNTIMES)('api-gateway transports on a real node ($label)', ({ runtimeClassName }) => {
  const client = gatewayClient();
  const suffix = randomBytes(3).toString('hex');
  const names = { Agent: `gw-agent-${suffix}`, KubernetesExec: `gw-kexec-${suffix}` } as const;
  const transports = ['Agent', 'KubernetesExec'] as const;

  beforeAll(
    async () => {
      for (const execTransport of transports) {
        if (runtimeClassName) {
          await createSession(kubeClients(), NAMESPACE, names[execTransport], {
            execTransport,
            runtimeClassName,
          });
          continue;
        }
        await client.createSession({
          name: names[execTransport],
          image: IMAGE,
          execTransport,
          idleTimeoutSeconds: 900,
        });
      }
      for (const t of transports) {
        await waitFor(
          () => client.getSession(names[t]),
          predicate<Session>(`session ${names[t]} (${t}) Ready through the gateway`, (s) => s.ready),
          { timeoutMs: READY_TIMEOUT_MS, intervalMs: 250 },
        );
      }
    },
    READY_TIMEOUT_MS * 2 + 30_000,
  );

  afterAll(async () => {
    for (const t of transports) await client.deleteSession(names[t]).catch(() => undefined);
  });

  it.each([
    [
      'output on both streams and a non-zero exit',
      'echo out; echo err >&2; echo "$((6 * 7)) $(basename "$PWD")"; (exit 3)',
    ],
    ['a successful command with env and no output on stderr', 'printf "%s|" "$GREETING" a b'],
    ['a failing command of the image', 'ls /definitely-not-here'],
    ['non-UTF-8 output (base64)', "printf '\\377\\376abc'"],
  ])('returns the same result on both transports: %s', async (_what, command) => {
    const env = { GREETING: 'hello world' };
    const [agent, kexec] = await Promise.all(
      transports.map((t) => client.exec(names[t], { command, env, timeoutSeconds: 30 })),
    );
    expect(comparable(kexec!)).toEqual(comparable(agent!));
  });

  it('reports a timeout the same way on both transports (exit 124, timedOut)', async () => {
    const results = await Promise.all(
      transports.map((t) => client.exec(names[t], { command: 'echo started; sleep 30', timeoutSeconds: 2 })),
    );
    for (const r of results) expect(r).toMatchObject({ exitCode: 124, timedOut: true, stdout: 'started\n' });
  });

  it('streams the same output on both transports', async () => {
    const command = 'for i in 1 2 3; do echo "line $i"; sleep 0.2; done; echo done >&2; (exit 4)';
    const [agent, kexec] = await Promise.all(
      transports.map((t) => collect(client.execStream(names[t], { command }))),
    );
    expect(agent).toEqual({ stdout: 'line 1\nline 2\nline 3\n', stderr: 'done\n', exitCode: 4 });
    expect(kexec).toEqual(agent);
  });

  it('uploads and downloads the same bytes on both transports', async () => {
    const bytes = new Uint8Array([0, 1, 2, 127, 128, 255, 10]);
    for (const t of transports) {
      expect(await client.writeFile(names[t], 'e2e/data.bin', bytes)).toEqual({
        path: 'e2e/data.bin',
        size: bytes.length,
      });
      expect([...(await client.readFile(names[t], 'e2e/data.bin'))]).toEqual([...bytes]);
      expect((await client.exec(names[t], { command: 'wc -c < e2e/data.bin' })).stdout.trim()).toBe(
        String(bytes.length),
      );
    }
  });

  it('keeps shell state between calls with Agent, and starts fresh each call with KubernetesExec', async () => {
    for (const t of transports) await client.exec(names[t], { command: 'export KEEP=kept' });
    const [agent, kexec] = await Promise.all(
      transports.map((t) => client.exec(names[t], { command: 'echo "[$KEEP]"' })),
    );
    expect([agent!.stdout, kexec!.stdout]).toEqual(['[kept]\n', '[]\n']);
  });
});
