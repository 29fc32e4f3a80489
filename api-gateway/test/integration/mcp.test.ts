/** An MCP client from the official SDK against a listening gateway on a real API server. */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';

import { predicate, waitFor } from '@sandbox-platform/test-support';
import { connectMcp, toolText } from '../helpers/mcp-client.js';
import { GatewayEnv, KEYS } from '@sandbox-platform/test-support/gateway';

describe('MCP endpoint with a real API server and agent', () => {
  const env = new GatewayEnv();
  let client: Client;
  beforeAll(async () => {
    await env.setup();
    const gw = await env.startGateway();
    client = await connectMcp(gw.url, KEYS.a);
  });
  afterAll(async () => {
    await client.close();
    await env.teardown();
  });

  it('lists every tool of the production wiring and calls each one', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'create_session',
      'delete_session',
      'delete_snapshot',
      'exec',
      'fork_session',
      'get_snapshot',
      'list_processes',
      'list_sessions',
      'list_snapshots',
      'read_audit',
      'read_file',
      'read_process_output',
      'restart_code_context',
      'resume_session',
      'run_code',
      'set_egress',
      'signal_process',
      'snapshot_session',
      'start_process',
      'suspend_session',
      'verify_audit',
      'write_file',
    ]);

    const created = await client.callTool({ name: 'create_session', arguments: { session: 'mcp' } });
    expect(created.structuredContent).toMatchObject({ name: 'mcp', namespace: env.nsA.name, created: true });
    await env.makeReady(env.nsA.name, 'mcp');

    const ok = await client.callTool({
      name: 'exec',
      arguments: { session: 'mcp', command: 'cd /tmp && echo hi' },
    });
    expect(ok.isError).toBe(false);
    expect(toolText(ok)).toContain('hi');
    const failed = await client.callTool({
      name: 'exec',
      arguments: { session: 'mcp', command: 'pwd; exit 7' },
    });
    expect(failed.isError).toBe(true);
    expect(failed.structuredContent).toMatchObject({ exitCode: 7, stdout: '/tmp\n' });

    const written = await client.callTool({
      name: 'write_file',
      arguments: { session: 'mcp', path: 'n/a.txt', content: 'via mcp' },
    });
    expect(written.structuredContent).toEqual({ path: 'n/a.txt', size: 7 });
    const read = await client.callTool({ name: 'read_file', arguments: { session: 'mcp', path: 'n/a.txt' } });
    expect(toolText(read)).toBe('via mcp');

    const started = await client.callTool({
      name: 'start_process',
      arguments: { session: 'mcp', command: 'echo from-process; exec sleep 300' },
    });
    const { id } = started.structuredContent as { id: string };
    expect(started.structuredContent).toMatchObject({ id: expect.any(String), state: 'running' });
    const processes = await client.callTool({ name: 'list_processes', arguments: { session: 'mcp' } });
    expect((processes.structuredContent as { processes: Array<{ id: string }> }).processes).toEqual([
      expect.objectContaining({ id, state: 'running' }),
    ]);
    await waitFor(
      async () =>
        toolText(await client.callTool({ name: 'read_process_output', arguments: { session: 'mcp', id } })),
      predicate('the process output read back', (text) => text.includes('from-process')),
    );
    const signalled = await client.callTool({
      name: 'signal_process',
      arguments: { session: 'mcp', id, signal: 'SIGKILL' },
    });
    expect(signalled.structuredContent).toMatchObject({ id, state: 'exited', exitCode: 137 });

    // No Python kernel in this test's agent (no ipykernel): the agent's own refusal comes back.
    const code = await client.callTool({ name: 'run_code', arguments: { session: 'mcp', code: '1 + 1' } });
    expect([code.isError, toolText(code)]).toEqual([true, expect.stringMatching(/Python kernel/)]);
    const restarted = await client.callTool({ name: 'restart_code_context', arguments: { session: 'mcp' } });
    // The failed run removed the context it created: there is none to restart.
    expect([restarted.isError, toolText(restarted)]).toEqual([
      true,
      expect.stringMatching(/no code context/),
    ]);

    const egress = await client.callTool({
      name: 'set_egress',
      arguments: { session: 'mcp', allow: [{ host: 'pypi.org' }] },
    });
    expect(egress.isError).toBeFalsy();
    expect((await env.read(env.nsA.name, 'mcp')).spec.egress).toMatchObject({
      rules: [{ host: 'pypi.org' }],
    });
    for (const name of ['read_audit', 'verify_audit']) {
      const audit = await client.callTool({ name, arguments: { session: 'mcp' } });
      expect([name, audit.isError, toolText(audit)]).toEqual([
        name,
        true,
        expect.stringMatching(/audit trail is off/),
      ]);
    }

    const snapshot = await client.callTool({
      name: 'snapshot_session',
      arguments: { session: 'mcp', name: 'mcp-snap' },
    });
    expect(snapshot.structuredContent).toMatchObject({ name: 'mcp-snap', session: 'mcp' });
    const got = await client.callTool({ name: 'get_snapshot', arguments: { name: 'mcp-snap' } });
    expect(got.structuredContent).toMatchObject({ name: 'mcp-snap', ready: false });
    const forked = await client.callTool({
      name: 'fork_session',
      arguments: { session: 'mcp', count: 1, names: ['mcp-fork'] },
    });
    expect(forked.structuredContent).toMatchObject({ sessions: [{ name: 'mcp-fork' }] });
    const snapshots = await client.callTool({ name: 'list_snapshots', arguments: {} });
    expect((snapshots.structuredContent as { items: Array<{ name: string }> }).items).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'mcp-snap' })]),
    );
    const snapDeleted = await client.callTool({ name: 'delete_snapshot', arguments: { name: 'mcp-snap' } });
    expect(snapDeleted.structuredContent).toEqual({ deleted: 'mcp-snap' });

    const suspended = await client.callTool({ name: 'suspend_session', arguments: { session: 'mcp' } });
    expect(suspended.isError).toBeFalsy();
    expect((await env.read(env.nsA.name, 'mcp')).spec.suspend).toBe(true);
    const resumed = await client.callTool({ name: 'resume_session', arguments: { session: 'mcp' } });
    expect(resumed.isError).toBeFalsy();
    expect((await env.read(env.nsA.name, 'mcp')).spec.suspend).toBe(false);

    const listed = await client.callTool({ name: 'list_sessions', arguments: {} });
    expect((listed.structuredContent as { items: Array<{ name: string; ready: boolean }> }).items).toEqual([
      expect.objectContaining({ name: 'mcp', ready: true }),
      expect.objectContaining({ name: 'mcp-fork' }),
    ]);

    for (const session of ['mcp', 'mcp-fork']) {
      const deleted = await client.callTool({ name: 'delete_session', arguments: { session } });
      expect(deleted.structuredContent).toEqual({ deleted: session });
    }
    await waitFor(
      () => env.list(env.nsA.name),
      predicate(
        'sessions mcp and mcp-fork deleted',
        (items) => !items.some((s) => s.metadata.name?.startsWith('mcp')),
      ),
    );
  });
});
