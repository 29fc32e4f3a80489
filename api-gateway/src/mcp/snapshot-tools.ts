/**
 * MCP tools of snapshots and forks (docs/snapshots.md): fork_session (a snapshot of a session and
 * N sessions started from it: fan out work from a prepared environment), snapshot_session,
 * list_snapshots, get_snapshot and delete_snapshot. They go through the same snapshots service as
 * the REST routes, for the calling API key's namespaces only.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

import type { Principal } from '../auth/keys.js';
import { MAX_FORK_COUNT, type SnapshotsService } from '../service/snapshots-service.js';
import { jsonToolResult } from './format.js';

/** What the snapshot tools need from the tool set. */
export interface SnapshotToolDeps {
  snapshots: SnapshotsService;
  principal: Principal;
  ns: (requested: string | undefined) => string;
  guarded: (fn: () => Promise<CallToolResult>) => Promise<CallToolResult>;
  session: z.ZodTypeAny;
  namespace: z.ZodTypeAny;
}

const snapshotName = z
  .string()
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
  .max(63)
  .describe('Snapshot name, as returned by snapshot_session, fork_session or list_snapshots');
const ttl = z
  .number()
  .int()
  .min(0)
  .max(31536000)
  .optional()
  .describe('Delete the snapshot this many seconds after it is ready (default: keep it)');

/** Registers the tools. */
export function registerSnapshotTools(server: McpServer, d: SnapshotToolDeps): void {
  const { session, namespace, guarded } = d;
  server.registerTool(
    'fork_session',
    {
      title: 'Fork a sandbox: copy its /workspace into new sandboxes',
      description:
        "Takes a snapshot of a session's /workspace (files, directories, symlinks, modes, mtimes) and starts `count` new " +
        'sessions from it, each with the same image and settings and an identical, verified copy of the workspace. Use it ' +
        'to fan out work from a prepared environment (repository cloned, dependencies installed). The new sessions become ' +
        'ready once their copy is verified; commands sent before then wait for it. Changes in one copy are not seen by the ' +
        `others. At most ${MAX_FORK_COUNT} per call.`,
      inputSchema: {
        session,
        count: z.number().int().min(1).max(MAX_FORK_COUNT).describe('New sessions to start'),
        names: z.array(z.string()).optional().describe('Their names (exactly count); generated when omitted'),
        ttlSecondsAfterReady: ttl,
        namespace,
      },
    },
    (args: {
      session: string;
      count: number;
      names?: string[];
      ttlSecondsAfterReady?: number;
      namespace?: string;
    }) =>
      guarded(async () =>
        jsonToolResult({
          ...(await d.snapshots.fork(d.principal, d.ns(args.namespace), args.session, {
            count: args.count,
            names: args.names,
            ttlSecondsAfterReady: args.ttlSecondsAfterReady,
          })),
        }),
      ),
  );
  server.registerTool(
    'snapshot_session',
    {
      title: "Save a sandbox's /workspace as a snapshot",
      description:
        "Copies a ready session's /workspace into a snapshot (with a content digest) and returns it at once; call " +
        'get_snapshot until ready is true. New sessions can start from it (fork_session does both steps).',
      inputSchema: { session, name: snapshotName.optional(), ttlSecondsAfterReady: ttl, namespace },
    },
    (args: { session: string; name?: string; ttlSecondsAfterReady?: number; namespace?: string }) =>
      guarded(async () =>
        jsonToolResult({
          ...(await d.snapshots.create(d.ns(args.namespace), {
            session: args.session,
            name: args.name,
            ttlSecondsAfterReady: args.ttlSecondsAfterReady,
          })),
        }),
      ),
  );
  server.registerTool(
    'get_snapshot',
    {
      title: 'Get a snapshot',
      description: 'A snapshot: ready, its digest, size and file count, or why it is not ready.',
      inputSchema: { name: snapshotName, namespace },
    },
    (args: { name: string; namespace?: string }) =>
      guarded(async () => jsonToolResult({ ...(await d.snapshots.get(d.ns(args.namespace), args.name)) })),
  );
  server.registerTool(
    'list_snapshots',
    {
      title: 'List snapshots',
      description: 'The snapshots of your namespace.',
      inputSchema: { namespace },
    },
    (args: { namespace?: string }) =>
      guarded(async () => jsonToolResult({ items: await d.snapshots.list(d.ns(args.namespace)) })),
  );
  server.registerTool(
    'delete_snapshot',
    {
      title: 'Delete a snapshot',
      description:
        'Deletes a snapshot and its stored data. Sessions already started from it keep their copy.',
      inputSchema: { name: snapshotName, namespace },
      annotations: { destructiveHint: true },
    },
    (args: { name: string; namespace?: string }) =>
      guarded(async () => {
        await d.snapshots.delete(d.ns(args.namespace), args.name);
        return jsonToolResult({ deleted: args.name });
      }),
  );
}
