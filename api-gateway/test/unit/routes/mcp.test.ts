import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';

import { ProblemError } from '../../../src/errors.js';
import type { CancelSignal } from '../../../src/exec/types.js';
import { WinstonFastifyLogger, createWinston } from '../../../src/logger.js';
import { KEYS, buildTestApp, type TestApp } from '../../helpers/app.js';
import { result } from '../../helpers/fake-transport.js';
import { connectMcp, toolText } from '../../helpers/mcp-client.js';
import { ready, session } from '../../helpers/sessions.js';

/** Waits until `cond` holds; fails after 5 s (what a test waits for, not how fast it comes). */
async function until(cond: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met within 5 s');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('MCP endpoint (SDK client against a listening gateway with fakes)', () => {
  let t: TestApp;
  let url: string;
  let client: Client;
  const logged: string[] = [];
  beforeAll(async () => {
    const sink = { write: (line: string): boolean => logged.push(line) > 0 };
    t = await buildTestApp({}, { logger: new WinstonFastifyLogger(createWinston('warn', sink)) });
    url = await t.app.listen({ port: 0, host: '127.0.0.1' });
    client = await connectMcp(url, KEYS.a);
  });
  afterAll(async () => {
    await client.close();
    await t.app.close();
  });

  it('lists the fourteen tools with descriptions and input schemas', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((x) => x.name).sort()).toEqual([
      'create_session',
      'delete_session',
      'exec',
      'list_processes',
      'list_sessions',
      'read_file',
      'read_process_output',
      'restart_code_context',
      'resume_session',
      'run_code',
      'signal_process',
      'start_process',
      'suspend_session',
      'write_file',
    ]);
    const exec = tools.find((x) => x.name === 'exec')!;
    expect(exec.description).toMatch(/persist/);
    expect(exec.description).toMatch(/timeoutSeconds/);
    expect(exec.inputSchema.required).toEqual(['session', 'command']);
  });

  it('create_session creates in the key namespace and is idempotent', async () => {
    const first = await client.callTool({ name: 'create_session', arguments: { name: 'mcp-one' } });
    const second = await client.callTool({ name: 'create_session', arguments: { name: 'mcp-one' } });
    expect(first.structuredContent).toMatchObject({ name: 'mcp-one', namespace: 'team-a', created: true });
    expect(second.structuredContent).toMatchObject({ name: 'mcp-one', created: false });
  });

  it('exec returns output; a non-zero exit is a tool error that carries the output', async () => {
    t.store.put(session('mcp-run', 'team-a', ready()));
    t.agent.nextResult = result({ stdout: 'ok\n' });
    const good = await client.callTool({
      name: 'exec',
      arguments: { session: 'mcp-run', command: 'echo ok' },
    });
    t.agent.nextResult = result({ stderr: 'nope\n', exitCode: 2 });
    const bad = await client.callTool({ name: 'exec', arguments: { session: 'mcp-run', command: 'false' } });
    expect(good.isError).toBe(false);
    expect(toolText(good)).toContain('exit code: 0');
    expect(toolText(good)).toContain('ok\n');
    expect(bad.isError).toBe(true);
    expect(toolText(bad)).toContain('exit code: 2');
    expect(toolText(bad)).toContain('nope');
    expect(bad.structuredContent).toMatchObject({ exitCode: 2 });
  });

  it('write_file then read_file round-trips text and binary', async () => {
    t.store.put(session('mcp-files', 'team-a', ready()));
    const w = await client.callTool({
      name: 'write_file',
      arguments: { session: 'mcp-files', path: 'notes/a.txt', content: 'hello' },
    });
    expect(w.structuredContent).toEqual({ path: 'notes/a.txt', size: 5 });
    const r = await client.callTool({
      name: 'read_file',
      arguments: { session: 'mcp-files', path: 'notes/a.txt' },
    });
    expect(toolText(r)).toBe('hello');
    await client.callTool({
      name: 'write_file',
      arguments: {
        session: 'mcp-files',
        path: 'b.bin',
        content: Buffer.from([0xff, 0]).toString('base64'),
        encoding: 'base64',
      },
    });
    const rb = await client.callTool({
      name: 'read_file',
      arguments: { session: 'mcp-files', path: 'b.bin' },
    });
    expect(rb.structuredContent).toMatchObject({ encoding: 'base64', content: '/wA=', size: 2 });
  });

  it('list_sessions and delete_session act in the key namespace only', async () => {
    t.store.put(session('mcp-list', 'team-a', ready()));
    t.store.put(session('other-tenant', 'team-b', ready()));
    const list = await client.callTool({ name: 'list_sessions', arguments: {} });
    const names = (list.structuredContent as { items: Array<{ name: string }> }).items.map((i) => i.name);
    expect(names).toContain('mcp-list');
    expect(names).not.toContain('other-tenant');
    const del = await client.callTool({ name: 'delete_session', arguments: { session: 'mcp-list' } });
    expect(del.isError).toBeFalsy();
    expect(t.store.get('team-a', 'mcp-list')).toBeUndefined();
  });

  it('reports gateway problems as tool errors, including another tenant namespace', async () => {
    const unknown = await client.callTool({ name: 'exec', arguments: { session: 'nope', command: 'true' } });
    const foreign = await client.callTool({ name: 'list_sessions', arguments: { namespace: 'team-b' } });
    t.store.put(session('mcp-down', 'team-a', ready()));
    t.agent.nextResult = new ProblemError('upstream-error', 'the sandbox agent could not be reached', {
      retryAfterSeconds: 1,
    });
    const down = await client.callTool({ name: 'exec', arguments: { session: 'mcp-down', command: 'true' } });
    expect([unknown.isError, foreign.isError, down.isError]).toEqual([true, true, true]);
    expect(toolText(unknown)).toMatch(/session-not-found \(404\)/);
    expect(toolText(foreign)).toMatch(/forbidden \(403\)/);
    expect(toolText(down)).toMatch(/upstream-error \(502\).*Retry in 1 s/);
  });

  it('never leaks internal error details into a tool result', async () => {
    t.store.createError = new Error('etcd: connection refused at 10.0.0.1:2379');
    const res = await client.callTool({ name: 'create_session', arguments: { name: 'mcp-broken' } });
    t.store.createError = undefined;
    expect(res.isError).toBe(true);
    expect(toolText(res)).not.toMatch(/etcd|10\.0\.0\.1/);
  });

  it('cancels the command when the HTTP client goes away (the agent call gets an aborted signal)', async () => {
    t.store.put(session('mcp-cancel', 'team-a', ready()));
    let signal: CancelSignal | undefined;
    const original = t.agent.exec.bind(t.agent);
    t.agent.exec = (_target, _req, opts) => {
      signal = opts?.signal;
      return new Promise<never>(() => undefined); // a command that runs until cancelled
    };
    try {
      const aborter = new AbortController();
      const call = fetch(`${url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${KEYS.a}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'exec', arguments: { session: 'mcp-cancel', command: 'sleep 600' } },
        }),
        signal: aborter.signal,
      }).catch(() => undefined);
      await until(() => signal !== undefined);
      expect(signal!.aborted).toBe(false);
      aborter.abort();
      await call;
      await until(() => signal!.aborted);
      expect(signal!.aborted).toBe(true);
    } finally {
      t.agent.exec = original;
    }
  });

  it('answers a result that cannot be serialized with an error result, and logs it once', async () => {
    t.store.put(session('mcp-bigint', 'team-a', ready()));
    // A value JSON cannot hold (the agent's answers are validated, so only a defect could do this).
    t.agent.nextResult = result({ stdout: 'x', durationMs: 1n as unknown as number });
    const res = await client.callTool(
      { name: 'exec', arguments: { session: 'mcp-bigint', command: 'true' } },
      undefined,
      { timeout: 10_000 },
    );
    expect(res.isError).toBe(true);
    expect(toolText(res)).toMatch(/internal \(500\)/);
    expect(logged.filter((l) => l.includes('cannot be serialized'))).toHaveLength(1);
  });

  it('rejects MCP requests without a valid key (401) and GET in stateless mode (405)', async () => {
    const noKey = await fetch(`${url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    const get = await fetch(`${url}/mcp`, { headers: { authorization: `Bearer ${KEYS.a}` } });
    expect([noKey.status, get.status]).toEqual([401, 405]);
  });
});
