/** An MCP client from the official SDK against a listening gateway on a real API server. */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';

import { predicate, waitFor } from '../../../test-e2e/src/framework/index.js';
import { connectMcp, toolText } from '../helpers/mcp-client.js';
import { GatewayEnv, KEYS } from './gateway-env.js';

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

  it('lists every tool of the production wiring and calls the session, exec, file and process ones', async () => {
    const { tools } = await client.listTools();
    // Code (ADR 0033), snapshots (docs/snapshots.md) and egress/audit (ADR 0034) tools have their
    // own tests; here they must be offered, as the production wiring registers them.
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

    const listed = await client.callTool({ name: 'list_sessions', arguments: {} });
    expect((listed.structuredContent as { items: Array<{ name: string; ready: boolean }> }).items).toEqual([
      expect.objectContaining({ name: 'mcp', ready: true }),
    ]);

    const deleted = await client.callTool({ name: 'delete_session', arguments: { session: 'mcp' } });
    expect(deleted.isError).toBeFalsy();
    await waitFor(
      () => env.list(env.nsA.name),
      predicate('session mcp deleted', (items) => !items.some((s) => s.metadata.name === 'mcp')),
    );
  });
});
