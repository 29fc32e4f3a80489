/**
 * MCP tools for background processes (ADR 0018): start one (a dev server, a watcher, a long
 * build), list them, read their output from offsets, signal them. They go through the same
 * process service as the REST routes, for the calling API key only. Output read into a model's
 * context is kept small by default (MCP_DEFAULT_READ_BYTES per stream).
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { MAX_READ_BYTES, MAX_WAIT_SECONDS, PROCESS_SIGNALS, type ProcessOutput } from '@sandbox-platform/api';
import { z } from 'zod';

import type { CallOptions } from '../exec/types.js';
import type { ProcessService } from '../service/process-service.js';
import { jsonToolResult } from './format.js';

/** Bytes per stream read_process_output returns unless asked for more (a model's context is small). */
export const MCP_DEFAULT_READ_BYTES = 16 * 1024;

/** What the process tools need from the tool set. */
export interface ProcessToolDeps {
  processes: ProcessService;
  /** The namespace for a requested one (the key's default when absent; 403 when not the key's). */
  ns: (requested: string | undefined) => string;
  guarded: (fn: () => Promise<CallToolResult>) => Promise<CallToolResult>;
  call: CallOptions;
  /** Zod schemas shared with the other tools (one vocabulary: `session` in every tool). */
  session: z.ZodTypeAny;
  namespace: z.ZodTypeAny;
}

const id = z.string().min(1).max(64).describe('Process id, as returned by start_process or list_processes');

/** Registers start_process, list_processes, read_process_output and signal_process. */
export function registerProcessTools(server: McpServer, d: ProcessToolDeps): void {
  const { session, namespace } = d;
  const ref = (args: { session: string; namespace?: string }): { namespace: string; name: string } => ({
    namespace: d.ns(args.namespace),
    name: args.session,
  });

  server.registerTool(
    'start_process',
    {
      title: 'Start a background process in a sandbox',
      description:
        'Starts a bash command line in the background of a sandbox session and returns at once with its id: use it for servers ' +
        '(e.g. "python3 -m http.server 8000"), watchers and long builds instead of exec. The process has its own process group, ' +
        'survives the call and ends with the session. Read its output with read_process_output, stop it with signal_process.',
      inputSchema: {
        session,
        command: z.string().min(1).describe('A bash command line, e.g. "npm run dev"'),
        cwd: z
          .string()
          .min(1)
          .max(4096)
          .optional()
          .describe('Working directory (relative to /workspace or absolute)'),
        namespace,
      },
    },
    (args: { session: string; command: string; cwd?: string; namespace?: string }) =>
      d.guarded(async () => {
        const req = { command: args.command, ...(args.cwd !== undefined ? { cwd: args.cwd } : {}) };
        return jsonToolResult({ ...(await d.processes.start(ref(args), req, d.call)) });
      }),
  );

  server.registerTool(
    'list_processes',
    {
      title: 'List the background processes of a sandbox',
      description:
        'Lists the background processes of a sandbox session (running and exited), oldest first, with their state and exit code.',
      inputSchema: { session, namespace },
    },
    (args: { session: string; namespace?: string }) =>
      d.guarded(async () => jsonToolResult({ ...(await d.processes.list(ref(args), d.call)) })),
  );

  server.registerTool(
    'read_process_output',
    {
      title: 'Read the output of a background process',
      description:
        'Returns what a background process wrote to stdout and stderr from the given byte offsets (0: from the start), ' +
        `at most maxBytes per stream (default ${MCP_DEFAULT_READ_BYTES}), and the offsets to pass next time to read only what is new. ` +
        'skipped > 0 means older output was dropped from the buffer. Also returns the process state and exit code.',
      inputSchema: {
        session,
        id,
        stdoutOffset: z.number().int().min(0).optional().describe('First stdout byte wanted (default 0)'),
        stderrOffset: z.number().int().min(0).optional().describe('First stderr byte wanted (default 0)'),
        maxBytes: z.number().int().min(1).max(MAX_READ_BYTES).optional().describe('Most bytes per stream'),
        namespace,
      },
    },
    (args: {
      session: string;
      id: string;
      stdoutOffset?: number;
      stderrOffset?: number;
      maxBytes?: number;
      namespace?: string;
    }) =>
      d.guarded(async () => {
        const query = {
          maxBytes: args.maxBytes ?? MCP_DEFAULT_READ_BYTES,
          ...(args.stdoutOffset !== undefined ? { stdoutOffset: args.stdoutOffset } : {}),
          ...(args.stderrOffset !== undefined ? { stderrOffset: args.stderrOffset } : {}),
        };
        return outputResult(await d.processes.output(ref(args), args.id, query, d.call));
      }),
  );

  server.registerTool(
    'signal_process',
    {
      title: 'Signal (stop) a background process',
      description:
        'Sends a signal to the process group of a background process (default SIGTERM, which asks it to stop; SIGKILL forces it) ' +
        'and waits up to waitSeconds for it to exit. Returns its state and exit code (128+N when ended by signal N).',
      inputSchema: {
        session,
        id,
        signal: z.enum(PROCESS_SIGNALS).optional().describe('Signal name (default SIGTERM)'),
        waitSeconds: z
          .number()
          .int()
          .min(0)
          .max(MAX_WAIT_SECONDS)
          .optional()
          .describe('Seconds to wait for the exit (default 5; 0: do not wait)'),
        namespace,
      },
    },
    (args: {
      session: string;
      id: string;
      signal?: (typeof PROCESS_SIGNALS)[number];
      waitSeconds?: number;
      namespace?: string;
    }) =>
      d.guarded(async () => {
        const at = ref(args);
        const info = await d.processes.signal(at, args.id, args.signal ?? 'SIGTERM', d.call);
        const wait = args.waitSeconds ?? 5;
        if (wait === 0 || info.state === 'exited') return jsonToolResult({ ...info });
        return jsonToolResult({ ...(await d.processes.wait(at, args.id, wait, d.call)) });
      }),
  );
}

/** The output as text a model reads (both streams labelled) plus the structured answer. */
function outputResult(out: ProcessOutput): CallToolResult {
  const p = out.process;
  const state =
    p.state === 'exited'
      ? `exited with code ${p.exitCode ?? 0}${p.signal ? ` (${p.signal})` : ''}`
      : 'running';
  const lines = [`process ${p.id}: ${state}`];
  for (const name of ['stdout', 'stderr'] as const) {
    const c = out[name];
    const note = c.skipped > 0 ? `, ${c.skipped} older bytes dropped` : '';
    lines.push(
      `--- ${name} bytes ${c.offset}..${c.nextOffset}${note}${c.encoding === 'base64' ? ' (base64)' : ''} ---`,
      c.data,
    );
  }
  return { content: [{ type: 'text', text: lines.join('\n') }], structuredContent: { ...out } };
}
