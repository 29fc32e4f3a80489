/**
 * e2e: the code interpreter and file watching (issue 29, ADR 0033) through the in-cluster gateway,
 * on a session of the sandbox-python image (the real IPython engine in a sandbox Pod, under the
 * cluster's default runtime):
 *
 * - `x = 41` then `x + 1` gives 42; a matplotlib chart comes back as image/png through REST and,
 *   through the official MCP SDK client, as an image content block; a pandas DataFrame as
 *   text/html; an exception as an error with its traceback; `while True: pass` is stopped at its
 *   timeout and the context keeps its state; a restart clears it.
 * - Hostile: a cell printing 100 MiB and a display of a 50 MiB image come back bounded with a
 *   clear marker (dropped counts, omitted items); on the local cluster no gateway replica's peak
 *   RSS grows by anything near what the sandbox produced (printed).
 * - Watch: create, modify, rename and delete under a watched directory arrive in order; watching
 *   outside the workspace is refused (403 path-forbidden).
 *
 * Needs the platform deployed with the sandbox-python image imported and admitted (make
 * platform-up), and from the e2e setup: E2E_GATEWAY_URL, E2E_GATEWAY_API_KEY, E2E_OTHER_API_KEY,
 * E2E_PLATFORM_NAMESPACE, E2E_PLATFORM_RELEASE.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { kubeClients } from '../../src/framework/index.js';
import { notRun, NOT_LOCAL_REASON } from '../../src/framework/not-run.js';
import { api, BASE, eventually, expectProblem, KEY } from '../gateway/interactive-support.js';
import { GatewayProcess, MIB } from '../hostile/gateway-process.js';
import { uniqueName } from '../isolation/support.js';

const PYTHON_IMAGE = process.env.E2E_PYTHON_IMAGE ?? 'localhost/sandbox-platform/sandbox-python:dev';
const PLATFORM_NS = process.env.E2E_PLATFORM_NAMESPACE ?? 'sandbox-system';
const RELEASE = process.env.E2E_PLATFORM_RELEASE ?? 'sandbox';
const onLocalCluster = !process.env.E2E_KUBECONFIG;

type Run = {
  status: string;
  stdout: string;
  outputs: Array<{
    type: string;
    data: Record<string, string>;
    omitted?: Array<{ mime: string; bytes: number }>;
  }>;
  error?: { name: string; value: string; traceback: string[] };
  truncated: boolean;
  dropped: { stdout: number; stderr: number; displays: number };
  contextReset: boolean;
};

describe('code interpreter and file watching (sandbox-python session)', () => {
  const name = uniqueName('code');
  const path = `/v1/sessions/${name}`;
  const run = async (code: string, extra: Record<string, unknown> = {}): Promise<Run> => {
    const r = await api('POST', `${path}/code`, { code, ...extra });
    expect({ status: r.status, body: r.status === 200 ? 'ok' : r.body }).toEqual({ status: 200, body: 'ok' });
    return r.body as unknown as Run;
  };

  beforeAll(async () => {
    const created = await eventually(
      'the session to be created',
      () => api('POST', '/v1/sessions', { name, image: PYTHON_IMAGE }).catch(() => undefined),
      5,
    );
    expect([200, 201]).toContain(created.status);
    await eventually(
      'the session to be ready',
      async () => {
        const r = await api('POST', `${path}/exec`, { command: 'true', waitSeconds: 60 }).catch(
          () => undefined,
        );
        return r?.status === 200 ? r : undefined;
      },
      5,
    );
  }, 300_000);
  afterAll(async () => {
    await api('DELETE', path);
  }, 60_000);

  it('keeps state between runs: x = 41, then x + 1 is 42', async () => {
    const first = await run('x = 41', { waitSeconds: 60 });
    expect(first).toMatchObject({ status: 'ok', contextReset: true });
    const second = await run('x + 1');
    expect(second.outputs).toEqual([{ type: 'result', data: { 'text/plain': '42' } }]);
    expect(second.contextReset).toBe(false);
  }, 180_000);

  it('a matplotlib chart comes back as image/png; a DataFrame as text/html', async () => {
    const chart = await run('import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [3, 1, 2])\nplt.show()');
    const png = chart.outputs.find((o) => o.data['image/png'])?.data['image/png'] ?? '';
    expect(Buffer.from(png, 'base64').subarray(1, 4).toString()).toBe('PNG');
    const frame = await run('import pandas as pd\npd.DataFrame({"a": [1, 2], "b": ["x", "y"]})');
    expect(frame.outputs[0]?.data['text/html']).toContain('<table');
  }, 120_000);

  it('the official MCP SDK client gets the chart as an image content block', async () => {
    const client = new Client({ name: 'e2e-code', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL('/mcp', BASE), {
        requestInit: { headers: { authorization: `Bearer ${KEY}` } },
      }),
    );
    try {
      const r = await client.callTool({
        name: 'run_code',
        arguments: {
          session: name,
          code: 'import matplotlib.pyplot as plt\nplt.bar(["a", "b"], [3, 5])\nplt.show()',
        },
      });
      expect(r.isError).toBeFalsy();
      const image = (r.content as Array<{ type: string; mimeType?: string; data?: string }>).find(
        (c) => c.type === 'image',
      );
      expect(image?.mimeType).toBe('image/png');
      expect(
        Buffer.from(image?.data ?? '', 'base64')
          .subarray(1, 4)
          .toString(),
      ).toBe('PNG');
    } finally {
      await client.close();
    }
  }, 120_000);

  it('an exception comes back with its name, value and traceback', async () => {
    const r = await run('def f():\n    return {}["missing"]\nf()');
    expect(r.status).toBe('error');
    expect(r.error).toMatchObject({ name: 'KeyError', value: "'missing'" });
    expect(r.error?.traceback.join('\n')).toContain('return {}["missing"]');
  }, 60_000);

  it('`while True: pass` is stopped by its timeout; the context is usable after, with its state', async () => {
    await run('kept = 7');
    const stopped = await run('while True: pass', { timeoutSeconds: 2 });
    expect(stopped.status).toBe('timeout');
    const after = await run('kept * 6');
    expect(after.outputs[0]?.data['text/plain']).toBe('42');
  }, 120_000);

  it('restart clears the state', async () => {
    await run('y = 1');
    const restarted = await api('POST', `${path}/code/contexts/default/restart`, {});
    expect(restarted.status).toBe(200);
    const r = await run('y');
    expect(r.error?.name).toBe('NameError');
  }, 120_000);

  it('HOSTILE: 100 MiB printed and a 50 MiB image are bounded with a marker; the gateway does not hold them', async () => {
    const { core } = kubeClients();
    const gateways = onLocalCluster ? await GatewayProcess.findAll(core, PLATFORM_NS, RELEASE) : [];
    if (!onLocalCluster) notRun('the gateway memory check', NOT_LOCAL_REASON);
    for (const g of gateways) g.resetPeak();
    const before = gateways.map((g) => g.memory().rss);
    const printed = await run('print("x" * (100 * 1024 * 1024))', { timeoutSeconds: 120 });
    expect(printed.stdout.length).toBe(1024 * 1024);
    expect(printed.truncated).toBe(true);
    expect(printed.dropped.stdout).toBe(100 * MIB + 1 - MIB);
    const image = await run(
      'from IPython.display import display\ndisplay({"image/png": "A" * (50 * 1024 * 1024), "text/plain": "<big>"}, raw=True)',
      { timeoutSeconds: 120 },
    );
    expect(image.outputs[0]).toEqual({
      type: 'display',
      data: { 'text/plain': '<big>' },
      omitted: [{ mime: 'image/png', bytes: 50 * MIB }],
    });
    expect(image.truncated).toBe(true);
    const growth = gateways.map((g, i) => g.memory().hwm - (before[i] ?? 0));
    console.log(
      `gateway peak RSS growth during 150 MiB of hostile output: ${growth.map((b) => `${(b / MIB).toFixed(1)} MiB`).join(', ')}`,
    );
    for (const b of growth) expect(b).toBeLessThan(48 * MIB);
    // The context is still usable.
    expect((await run('1 + 1')).outputs[0]?.data['text/plain']).toBe('2');
  }, 300_000);

  it('watch: create, modify, rename and delete arrive in order; outside the workspace is refused', async () => {
    await api('POST', `${path}/exec`, { command: 'mkdir -p watched' });
    const res = await fetch(new URL(`${path}/watch?path=watched&timeoutSeconds=20`, BASE), {
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    const lines: Array<{ type: string; path?: string; from?: string; reason?: string }> = [];
    let text = '';
    const read = async (until: (l: typeof lines) => boolean): Promise<void> => {
      while (!until(lines)) {
        const { value, done } = await reader.read();
        if (done) return;
        text += decoder.decode(value, { stream: true });
        const parts = text.split('\n');
        text = parts.pop() ?? '';
        for (const p of parts) if (p) lines.push(JSON.parse(p) as (typeof lines)[number]);
      }
    };
    await read((l) => l.length > 0);
    expect(lines[0]).toMatchObject({ type: 'watching', path: 'watched' });
    const ops = await api('POST', `${path}/exec`, {
      command: 'echo one > watched/a && echo two >> watched/a && mv watched/a watched/b && rm watched/b',
    });
    expect(ops.body.exitCode).toBe(0);
    await read((l) => l.some((x) => x.type === 'delete'));
    await reader.cancel();
    const changes = lines
      .slice(1)
      .map((l) => [l.type, l.path, l.from])
      .filter((c, i, all) => !(c[0] === 'modify' && JSON.stringify(all[i - 1]) === JSON.stringify(c)));
    expect(changes).toEqual([
      ['create', 'watched/a', undefined],
      ['modify', 'watched/a', undefined],
      ['rename', 'watched/b', 'watched/a'],
      ['delete', 'watched/b', undefined],
    ]);
    for (const outside of ['..', '/etc', 'watched/../..']) {
      expectProblem(
        await api('GET', `${path}/watch?path=${encodeURIComponent(outside)}`),
        403,
        'path-forbidden',
      );
    }
  }, 120_000);
});
