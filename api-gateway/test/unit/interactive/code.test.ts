/**
 * The code interpreter through the gateway (ADR 0031), against a real agent with a real ipykernel
 * (the venv of `make code-venv`): REST JSON and NDJSON runs, contexts, problems passed through,
 * and MCP run_code through the official MCP SDK client, with a matplotlib chart as an image
 * content block.
 */
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';

import { KEYS } from '../../helpers/app.js';
import { startAgentApp, type AgentApp } from '../../helpers/agent-app.js';
import { connectMcp, toolText } from '../../helpers/mcp-client.js';
import { BRIDGE_PATH, testPython } from '../../../../sandbox-agent/test/unit/helpers/code-client.js';

jest.setTimeout(120_000);

describe('code interpreter through the gateway (real agent and kernel)', () => {
  let g: AgentApp;
  let client: Client;
  beforeAll(async () => {
    g = await startAgentApp({ code: { python: testPython(), bridgePath: BRIDGE_PATH } });
    client = await connectMcp(g.url, KEYS.a);
  });
  afterAll(async () => {
    await client.close();
    await g.close();
  });

  const post = (path: string, body: unknown, key = KEYS.a): Promise<Response> =>
    fetch(`${g.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('keeps state: x = 41, then x + 1 gives the result 42 (JSON)', async () => {
    expect((await post('/v1/sessions/demo/code', { code: 'x = 41' })).status).toBe(200);
    const res = await post('/v1/sessions/demo/code', { code: 'print("hi")\nx + 1' });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      status: 'ok',
      stdout: 'hi\n',
      outputs: [{ type: 'result', data: { 'text/plain': '42' } }],
      contextReset: false,
      truncated: false,
    });
    expect(g.activity.begun).toBeGreaterThan(0);
    expect(g.activity.ended).toBe(g.activity.begun);
  });

  it('streams the events of a run as NDJSON, the end line last', async () => {
    const res = await post('/v1/sessions/demo/code/stream', { code: 'import sys\nprint("a")\n1/0' });
    expect(res.headers.get('content-type')).toContain('application/x-ndjson');
    const lines = (await res.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; name?: string; status?: string });
    expect(lines.map((l) => l.type)).toEqual(['stdout', 'error', 'end']);
    expect(lines[1]).toMatchObject({ name: 'ZeroDivisionError' });
    expect(lines[2]).toMatchObject({ status: 'error' });
  });

  it('lists, restarts and removes contexts; unknown ones are 404 context-not-found', async () => {
    const list = await fetch(`${g.url}/v1/sessions/demo/code/contexts`, {
      headers: { authorization: `Bearer ${KEYS.a}` },
    });
    expect(
      ((await list.json()) as { contexts: Array<{ name: string }> }).contexts.map((c) => c.name),
    ).toEqual(['default']);
    const restarted = await post('/v1/sessions/demo/code/contexts/default/restart', {});
    expect(await restarted.json()).toMatchObject({ name: 'default', state: 'idle', executionCount: 0 });
    const after = (await (await post('/v1/sessions/demo/code', { code: 'x' })).json()) as Record<
      string,
      unknown
    >;
    expect(after).toMatchObject({ status: 'error', error: { name: 'NameError' } });
    const missing = await post('/v1/sessions/demo/code/contexts/nope/interrupt', {});
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { type: string }).type).toBe(
      'https://sandbox.dev/problems/context-not-found',
    );
    const created = await post('/v1/sessions/demo/code/contexts', { name: 'second' });
    expect(created.status).toBe(201);
    const removed = await fetch(`${g.url}/v1/sessions/demo/code/contexts/second`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${KEYS.a}` },
    });
    expect(removed.status).toBe(204);
  });

  it('refuses another tenant and bad requests', async () => {
    expect((await post('/v1/sessions/demo/code', { code: '1' }, KEYS.b)).status).toBe(404);
    expect((await post('/v1/sessions/demo/code', { code: '1', context: 'Bad!' })).status).toBe(400);
    expect((await post('/v1/sessions/demo/code', { code: '1', timeoutSeconds: 301 })).status).toBe(400);
  });

  it('MCP run_code (official SDK client): a chart comes back as an image content block', async () => {
    const code =
      'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [2, 4, 1])\nplt.title("t")\nplt.show()';
    const r = await client.callTool({ name: 'run_code', arguments: { session: 'demo', code } });
    expect(r.isError).toBeFalsy();
    const content = r.content as Array<{ type: string; mimeType?: string; data?: string }>;
    const image = content.find((c) => c.type === 'image');
    expect(image?.mimeType).toBe('image/png');
    expect(
      Buffer.from(image?.data ?? '', 'base64')
        .subarray(1, 4)
        .toString(),
    ).toBe('PNG');
    expect(toolText(r)).toContain('image/png image attached');
  });

  it('MCP run_code: a DataFrame as text, an exception as a tool error with its traceback', async () => {
    const frame = await client.callTool({
      name: 'run_code',
      arguments: { session: 'demo', code: 'import pandas as pd\npd.DataFrame({"a": [1, 2]})' },
    });
    expect(toolText(frame)).toMatch(/a\n0\s+1\n1\s+2/);
    const failed = await client.callTool({
      name: 'run_code',
      arguments: { session: 'demo', code: 'raise ValueError("bad")' },
    });
    expect(failed.isError).toBe(true);
    expect(toolText(failed)).toContain('ValueError: bad');
    expect(toolText(failed)).toContain('Traceback');
  });
});

describe('code interpreter without a kernel', () => {
  it('passes 503 code-unavailable through, with the reason', async () => {
    const g = await startAgentApp({ code: { python: '/bin/false', bridgePath: BRIDGE_PATH } });
    try {
      const res = await fetch(`${g.url}/v1/sessions/demo/code`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEYS.a}`, 'content-type': 'application/json' },
        body: JSON.stringify({ code: '1' }),
      });
      expect(res.status).toBe(503);
      expect(((await res.json()) as { type: string }).type).toBe(
        'https://sandbox.dev/problems/code-unavailable',
      );
    } finally {
      await g.close();
    }
  });
});
