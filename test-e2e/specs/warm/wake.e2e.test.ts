/**
 * e2e (issue 27, ADR 0015/0016): a suspended session whose startup command serves HTTP on port
 * 8000 comes back on traffic.
 *
 * A pooled session is created through the gateway with `startupCommand` (a node HTTP server on
 * port 8000, the agent image's node) and suspended (its Pod deleted). Then:
 *
 * - one `GET` of its port route (no retry by the caller) resumes it and returns the server's
 *   answer: the session gets a Pod again (warm or cold), whose agent started the startup command
 *   again, and the gateway waited for both the session and the server;
 * - suspended again, opening its terminal resumes it too: the WebSocket opens and a command typed
 *   into it runs on the new Pod;
 * - the startup process is listed with the session's processes.
 */
import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import WebSocket from 'ws';

import { deletePool } from '../support/custom-objects.js';
import { kube, NS, READY_MS, sbx, session, warmPool } from './support.js';

const suffix = randomBytes(3).toString('hex');
const POOL = `warm-wake-${suffix}`;
const NAME = `warm-wake-${suffix}`;
const GREETING = `hello from 8000 ${suffix}`;
const STARTUP = `exec node -e "require('http').createServer((q, s) => s.end('${GREETING}')).listen(8000)"`;

const gateway = process.env.E2E_GATEWAY_URL!;
const apiKey = process.env.E2E_GATEWAY_API_KEY!;

async function suspended(): Promise<void> {
  await sbx.suspendSession(NAME);
  for (const deadline = Date.now() + READY_MS; Date.now() < deadline;) {
    const s = await session(NAME);
    const pods = await kube.core.listNamespacedPod({ namespace: NS });
    const podGone = !pods.items.some((p) => p.metadata?.name === s?.status?.podName);
    if (s?.status?.conditions?.[0]?.reason === 'Suspended' && !s.status.podName && podGone) return;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`${NAME} did not get suspended in ${READY_MS} ms`);
}

describe('a suspended session with a startup command serving port 8000', () => {
  beforeAll(async () => {
    await warmPool(POOL, 2);
    await sbx.createSession({
      name: NAME,
      pool: POOL,
      idleTimeoutSeconds: 900,
      startupCommand: STARTUP,
    } as Parameters<typeof sbx.createSession>[0]);
    await sbx.exec(NAME, { command: 'true', waitSeconds: 120 });
  }, READY_MS);

  afterAll(async () => {
    await sbx.deleteSession(NAME).catch(() => undefined);
    await deletePool(kube, NS, POOL).catch(() => undefined);
  });

  it('lists the startup process with the session processes', async () => {
    const processes = await sbx.listProcesses(NAME);
    expect(processes.map((p) => p.command)).toContain(STARTUP);
  });

  it("a GET of its port route resumes it and returns the server's answer", async () => {
    await suspended();
    const res = await fetch(`${gateway}/v1/sessions/${NAME}/ports/8000/?namespace=${NS}`, {
      headers: { authorization: `Bearer ${apiKey}` },
      signal: AbortSignal.timeout(READY_MS),
    });
    expect([res.status, await res.text()]).toEqual([200, GREETING]);
    const s = await session(NAME);
    expect(s?.spec.suspend).toBe(false);
    expect(s?.status?.lastResumeTime).toBeDefined();
  });

  it('opening its terminal resumes it too', async () => {
    await suspended();
    const url = `${gateway.replace(/^http/, 'ws')}/v1/sessions/${NAME}/pty?namespace=${NS}`;
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${apiKey}` } });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('unexpected-response', (_req, res) => reject(new Error(`terminal: HTTP ${res.statusCode}`)));
      ws.once('error', reject);
    });
    let screen = '';
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) screen += data.toString('utf8');
    });
    const marker = `woke-${suffix}`;
    // The marker is computed by the shell: the terminal echoes what is typed.
    ws.send(Buffer.from(`echo ${marker}-$((6*7))\r`), { binary: true });
    for (const deadline = Date.now() + 60_000; !screen.includes(`${marker}-42`) && Date.now() < deadline;)
      await new Promise((r) => setTimeout(r, 100));
    ws.close();
    expect(screen).toContain(`${marker}-42`);
    expect((await session(NAME))?.spec.suspend).toBe(false);
  });
});
