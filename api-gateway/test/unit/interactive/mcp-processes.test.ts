/**
 * The MCP tools of issue 15 with the official MCP SDK client, against a real agent: a process is
 * started, its output read and it is stopped; exec takes stdin; every tool names the session
 * `session` (create_session still accepts `name`, deprecated).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';

import { KEYS } from '../../helpers/app.js';
import { startAgentApp, type AgentApp } from '../../helpers/agent-app.js';
import { connectMcp, toolText } from '../../helpers/mcp-client.js';

type Structured = Record<string, unknown>;

describe('MCP process tools (official SDK client, real agent)', () => {
  let g: AgentApp;
  let client: Client;
  beforeAll(async () => {
    g = await startAgentApp();
    client = await connectMcp(g.url, KEYS.a);
  });
  afterAll(async () => {
    await client.close();
    await g.close();
  });

  const call = async (
    name: string,
    args: Record<string, unknown>,
  ): Promise<{ isError?: boolean; text: string; s: Structured }> => {
    const r = await client.callTool({ name, arguments: args });
    return {
      isError: r.isError as boolean | undefined,
      text: toolText(r),
      s: (r.structuredContent ?? {}) as Structured,
    };
  };

  it('lists the process tools, each naming the session `session`', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(
      expect.arrayContaining(['start_process', 'list_processes', 'read_process_output', 'signal_process']),
    );
    for (const t of tools) {
      const props = Object.keys((t.inputSchema as { properties?: object }).properties ?? {});
      if (t.name === 'list_sessions') continue;
      expect({ tool: t.name, session: props.includes('session') }).toEqual({ tool: t.name, session: true });
    }
  });

  it('starts a process, reads its output from offsets and stops it', async () => {
    const started = await call('start_process', { session: 'demo', command: 'echo started; exec sleep 300' });
    expect(started.isError).toBeFalsy();
    const id = started.s.id as string;
    expect(started.s).toMatchObject({ state: 'running' });

    let out = await call('read_process_output', { session: 'demo', id });
    for (let i = 0; i < 100 && !out.text.includes('started'); i++) {
      await new Promise((r) => setTimeout(r, 50));
      out = await call('read_process_output', { session: 'demo', id });
    }
    expect(out.text).toContain(`process ${id}: running`);
    expect(out.s).toMatchObject({ stdout: { data: 'started\n', nextOffset: 8 } });
    const next = await call('read_process_output', { session: 'demo', id, stdoutOffset: 8 });
    expect(next.s).toMatchObject({ stdout: { offset: 8, data: '' } });

    const listed = await call('list_processes', { session: 'demo' });
    expect((listed.s.processes as Array<{ id: string }>).map((p) => p.id)).toContain(id);

    const stopped = await call('signal_process', { session: 'demo', id });
    expect(stopped.s).toMatchObject({ id, state: 'exited', exitCode: 143, signal: 'SIGTERM' });
  });

  it('answers bad input as tool errors: unknown process, signal outside the list, other tenant', async () => {
    const unknown = await call('read_process_output', { session: 'demo', id: '0123456789ab' });
    expect(unknown.isError).toBe(true);
    expect(unknown.text).toContain('process-not-found');
    const bad = await client.callTool({
      name: 'signal_process',
      arguments: { session: 'demo', id: '0123456789ab', signal: 'SIGSEGV' },
    });
    expect(bad.isError).toBe(true);
    const other = await call('list_processes', { session: 'demo', namespace: 'team-b' });
    expect(other.isError).toBe(true);
    expect(other.text).toContain('forbidden');
  });

  it('exec passes stdin', async () => {
    const r = await call('exec', {
      session: 'demo',
      command: 'python3 -c "import sys; print(len(sys.stdin.read()))" 2>/dev/null || wc -c',
      stdin: 'x'.repeat(1000),
    });
    expect(r.s).toMatchObject({ exitCode: 0 });
    expect(String(r.s.stdout).trim()).toBe('1000');
  });

  it('create_session takes session, and name as its deprecated alias', async () => {
    const a = await call('create_session', { session: 'mcp-new' });
    expect(a.s).toMatchObject({ name: 'mcp-new', created: true });
    const b = await call('create_session', { name: 'mcp-new' });
    expect(b.s).toMatchObject({ name: 'mcp-new', created: false });
    const both = await call('create_session', { session: 'mcp-x', name: 'mcp-y' });
    expect(both.isError).toBe(true);
    expect(both.text).toContain('invalid-request');
  });
});
