/**
 * The MCP tools. Each acts for the calling API key only (its namespaces), through the same services
 * as the REST routes. Descriptions are written for a language model that has no other docs.
 */
import { PLATFORM_VERSION } from '@sandbox-platform/api';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { FastifyBaseLogger } from 'fastify';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

import type { Principal } from '../auth/keys.js';
import type { ExecLimits } from '../config.js';
import { ProblemError, isCallerGone, isProblemError } from '../errors.js';
import { encodeOutput } from '../exec/output.js';
import type { AnswerHold, CallOptions, CancelSignal } from '../exec/types.js';
import type { CpuMeter } from '../limits/cpu-meter.js';
import { readLimited } from '../exec/read-limited.js';
import { EXEC_STDIN_MAX_CHARS } from '../routes/exec/schemas.js';
import { checkWorkspacePath } from '../routes/files/path.js';
import type { ExecService } from '../service/exec-service.js';
import { resolveNamespace } from '../service/namespaces.js';
import type { CodeService } from '../service/code-service.js';
import type { ProcessService } from '../service/process-service.js';
import type { SessionsService } from '../service/sessions-service.js';
import type { TraceContext } from '../tracing/tracing-config.js';
import { errorToolResult, execToolResult, jsonToolResult } from './format.js';
import { registerCodeTools } from './code-tools.js';
import { registerEgressTools } from './egress-tools.js';
import type { AuditSink } from '../audit/client.js';
import type { EgressRuleWriter } from '../audit/egress-writer.js';
import { registerSnapshotTools } from './snapshot-tools.js';
import type { SnapshotsService } from '../service/snapshots-service.js';
import { registerProcessTools } from './process-tools.js';

/** What the tools need. */
export interface ToolContext {
  principal: Principal;
  sessions: SessionsService;
  execs: ExecService;
  /** Background processes (start_process, list_processes, read_process_output, signal_process). */
  processes: ProcessService;
  /** The code interpreter (run_code, restart_code_context; ADR 0033); absent: not offered. */
  code?: CodeService;
  /** Snapshots and forks (fork_session, snapshot_session, ...; docs/snapshots.md); absent: not offered. */
  snapshots?: SnapshotsService;
  /** Egress rules and the audit trail (set_egress, read_audit, verify_audit; issue 30); absent: not offered. */
  egress?: { rules?: EgressRuleWriter; audit?: AuditSink };
  limits: ExecLimits;
  /** Largest file read_file returns (tool results go into a model's context: keep it modest). */
  maxReadBytes: number;
  log: Pick<FastifyBaseLogger, 'error' | 'warn' | 'debug'>;
  /** Aborted when the HTTP client goes away: the command is cancelled (the agent kills it). */
  signal?: CancelSignal;
  /** Tracing on: the MCP request's trace context (the agent and Kubernetes calls are its span's children). */
  trace?: TraceContext;
  /** Where large agent answers take their memory from (the response's share of the budget). */
  answerHold?: AnswerHold;
  /** The caller's share of the gateway's CPU for reading answers. */
  meter?: CpuMeter;
  /**
   * Called with the serialized size of a result before it is sent; false when the gateway cannot
   * hold it now (the shared budget of large answers is used up).
   */
  hold?: (bytes: number) => boolean;
}

const SANDBOX =
  'A sandbox is an isolated Linux container (bash and common tools) that lives until deleted or idle for its idle timeout. ' +
  'Its writable working directory is /workspace.';

const session = z
  .string()
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
  .max(63)
  .describe(
    'Session name (lowercase letters, digits and "-", at most 63 characters), as given to or returned by create_session',
  );
const namespace = z
  .string()
  .optional()
  .describe("Kubernetes namespace; omit to use your API key's default namespace");
const path = z.string().min(1).max(4096).describe('File path relative to /workspace, e.g. "src/main.py"');

type Guard = (fn: () => Promise<CallToolResult>) => Promise<CallToolResult>;

/**
 * Runs a tool body; failures become tool errors, unexpected ones are logged once here. The result
 * is serialized once up front: one that cannot be (a value JSON cannot hold, or too large for a
 * string) would otherwise fail inside the MCP transport and leave the HTTP request unanswered; it
 * becomes an error result instead, with one log line.
 */
function guard(ctx: Pick<ToolContext, 'log' | 'hold'>): Guard {
  const { log } = ctx;
  return async (fn) => {
    let result: CallToolResult;
    try {
      result = await fn();
    } catch (err) {
      // The HTTP caller went away: nobody reads the result, and nothing failed but the call.
      if (isCallerGone(err)) {
        log.debug(
          { cause: err.cause instanceof Error ? err.cause.message : undefined },
          'MCP tool abandoned',
        );
      } else if (!isProblemError(err)) log.error({ err }, 'MCP tool failed');
      else if (err.status >= 500) log.warn({ slug: err.slug, detail: err.detail }, 'MCP tool failed');
      return errorToolResult(err);
    }
    let bytes: number;
    try {
      bytes = JSON.stringify(result).length;
    } catch (err) {
      log.error({ err }, 'MCP tool result cannot be serialized; answered with an error result');
      return errorToolResult(new ProblemError('internal'));
    }
    if (ctx.hold && !ctx.hold(bytes)) {
      log.warn({ bytes }, 'MCP tool result dropped: the buffered answer budget is used up');
      return errorToolResult(
        new ProblemError('overloaded', 'the gateway holds too many large answers right now', {
          retryAfterSeconds: 1,
        }),
      );
    }
    return result;
  };
}

/** A new server with every tool registered for this caller (stateless: one per HTTP request). */
export function buildMcpServer(ctx: ToolContext): McpServer {
  const server = new McpServer({ name: 'sandbox-platform', version: PLATFORM_VERSION });
  const ns = (requested: string | undefined): string => resolveNamespace(ctx.principal, requested);
  const guarded = guard(ctx);
  const call: CallOptions = {
    ...(ctx.signal ? { signal: ctx.signal } : {}),
    ...(ctx.answerHold ? { hold: ctx.answerHold } : {}),
    ...(ctx.meter ? { meter: ctx.meter } : {}),
    ...(ctx.trace ? { trace: ctx.trace } : {}),
  };

  server.registerTool(
    'create_session',
    {
      title: 'Create or get a sandbox session',
      description:
        `Creates a sandbox session, or returns the existing one when a session of that name exists (safe to call again). ${SANDBOX} ` +
        'Use one session per task and reuse it for every command of that task: files and shell state persist between exec calls. ' +
        'A new session needs a few seconds to start; exec waits for it. Omit session to get a generated name (returned in the result as name).',
      inputSchema: {
        session: session.optional(),
        // The argument was `name` before every tool said `session`; accepted for one release.
        name: session.optional().describe('Deprecated alias of session'),
        namespace,
        image: z
          .string()
          .optional()
          .describe("Container image; omit for the platform's default sandbox image"),
        idleTimeoutSeconds: z
          .number()
          .int()
          .min(1)
          .optional()
          .describe('Delete the session after this many idle seconds'),
        persistentWorkspace: z
          .boolean()
          .optional()
          .describe('Keep /workspace on a persistent volume: it survives suspension (see suspend_session)'),
        shutdownPolicy: z
          .enum(['Delete', 'Suspend'])
          .optional()
          .describe(
            'When idle: Delete (default) ends the session; Suspend (needs persistentWorkspace) stops it and the next call resumes it with its files',
          ),
        pool: session
          .optional()
          .describe(
            'A warm pool (SandboxPool) to take a ready sandbox from; not with image or persistentWorkspace',
          ),
      },
    },
    (args) =>
      guarded(async () => {
        const { session: chosen, name: alias, namespace: requested, ...overrides } = args;
        if (chosen !== undefined && alias !== undefined && chosen !== alias) {
          throw new ProblemError(
            'invalid-request',
            'session and its deprecated alias name differ: pass session only',
          );
        }
        const name = chosen ?? alias;
        const input = { ...overrides, ...(name !== undefined ? { name } : {}) };
        const { session: view, created } = await ctx.sessions.create(
          ctx.principal,
          ns(requested),
          input,
          ctx.trace,
        );
        return jsonToolResult({ ...view, created });
      }),
  );

  server.registerTool(
    'exec',
    {
      title: 'Run a shell command in a sandbox',
      description:
        `Runs a bash command line in a sandbox session and returns exit code, stdout and stderr. ${SANDBOX} ` +
        'State persists between exec calls of the same session: the working directory, exported variables and files ' +
        '(sessions created with execTransport KubernetesExec keep files only). Do not call `exit`: it ends the shell, which is ' +
        'restarted with its state lost. Commands of one session run one at a time. ' +
        `The command is killed after timeoutSeconds (default ${ctx.limits.defaultTimeoutSeconds}, at most ${ctx.limits.maxTimeoutSeconds}); ` +
        'output is capped and marked truncated. A non-zero exit code is reported as an error result that still carries the output. ' +
        'Pass input for the command as stdin (text, or base64 with stdinEncoding "base64"). ' +
        'Do not start interactive programs or servers in the foreground: start servers with start_process.',
      inputSchema: {
        session,
        command: z.string().min(1).describe('A bash command line, e.g. "cd app && python3 -m pytest -q"'),
        timeoutSeconds: z.number().int().min(1).max(ctx.limits.maxTimeoutSeconds).optional(),
        cwd: z
          .string()
          .optional()
          .describe('Working directory for this command (relative to /workspace or absolute)'),
        stdin: z
          .string()
          .max(EXEC_STDIN_MAX_CHARS)
          .optional()
          .describe('Standard input for the command (then end of file); without it stdin is empty'),
        stdinEncoding: z.enum(['utf-8', 'base64']).optional().describe('Encoding of stdin (default utf-8)'),
        namespace,
      },
    },
    (args) =>
      guarded(async () => {
        const input = {
          command: args.command,
          ...(args.timeoutSeconds !== undefined ? { timeoutSeconds: args.timeoutSeconds } : {}),
          ...(args.cwd !== undefined ? { cwd: args.cwd } : {}),
          ...(args.stdin !== undefined ? { stdin: args.stdin } : {}),
          ...(args.stdinEncoding !== undefined ? { stdinEncoding: args.stdinEncoding } : {}),
        };
        return execToolResult(await ctx.execs.exec(ns(args.namespace), args.session, input, call));
      }),
  );

  server.registerTool(
    'read_file',
    {
      title: 'Read a file from a sandbox',
      description:
        `Returns the content of a file in a sandbox session's /workspace: as text when it is UTF-8, else base64. ` +
        `Files over ${ctx.maxReadBytes} bytes are refused; use exec with head, tail or grep for large files.`,
      inputSchema: { session, path, namespace },
    },
    (args) =>
      guarded(async () => {
        const file = await ctx.execs.readFile(
          ns(args.namespace),
          args.session,
          checkWorkspacePath(args.path),
          call,
        );
        const bytes = await readLimited(file.body, ctx.maxReadBytes).catch((err: unknown) => {
          file.body.destroy();
          throw err instanceof ProblemError
            ? new ProblemError('payload-too-large', `the file exceeds ${ctx.maxReadBytes} bytes`)
            : err;
        });
        const { data, encoding } = encodeOutput(bytes);
        return {
          content: [
            { type: 'text', text: encoding === 'utf-8' ? data : `(base64, ${bytes.length} bytes)\n${data}` },
          ],
          structuredContent: { path: args.path, size: bytes.length, encoding, content: data },
        };
      }),
  );

  server.registerTool(
    'write_file',
    {
      title: 'Write a file into a sandbox',
      description:
        "Creates or replaces a file in a sandbox session's /workspace (parent directories are created; the replace is atomic). " +
        'Pass text as content, or binary data as base64 with encoding "base64".',
      inputSchema: {
        session,
        path,
        content: z.string().describe('The full file content'),
        encoding: z.enum(['utf-8', 'base64']).optional().describe('Encoding of content (default utf-8)'),
        namespace,
      },
    },
    (args) =>
      guarded(async () => {
        const data = Buffer.from(args.content, args.encoding === 'base64' ? 'base64' : 'utf8');
        const result = await ctx.execs.writeFile(
          ns(args.namespace),
          args.session,
          { path: checkWorkspacePath(args.path), data },
          call,
        );
        return jsonToolResult({ ...result });
      }),
  );

  server.registerTool(
    'list_sessions',
    {
      title: 'List sandbox sessions',
      description: 'Lists the sandbox sessions of a namespace with their readiness, reason and expiry time.',
      inputSchema: { namespace },
    },
    (args) =>
      guarded(() =>
        Promise.resolve().then(() => jsonToolResult({ items: ctx.sessions.list(ns(args.namespace)) })),
      ),
  );

  server.registerTool(
    'suspend_session',
    {
      title: 'Suspend a sandbox session',
      description:
        'Stops a sandbox session without deleting it: running processes end, files in /workspace are kept when it has a persistent workspace. ' +
        'The next exec or file call resumes it (a few seconds), as does resume_session.',
      inputSchema: { session, namespace },
    },
    (args) =>
      guarded(async () =>
        jsonToolResult({
          ...(await ctx.sessions.setSuspended(ns(args.namespace), args.session, true, ctx.trace)),
        }),
      ),
  );

  server.registerTool(
    'resume_session',
    {
      title: 'Resume a suspended sandbox session',
      description:
        'Starts a suspended sandbox session again on the same workspace and waits until it is ready. Not needed before exec: exec resumes it too.',
      inputSchema: { session, namespace },
    },
    (args) =>
      guarded(async () => {
        const namespace = ns(args.namespace);
        await ctx.sessions.setSuspended(namespace, args.session, false, ctx.trace);
        await ctx.execs.resolveTarget(namespace, args.session, ctx.limits.maxWaitSeconds, call);
        return jsonToolResult({ ...(await ctx.sessions.get(namespace, args.session, ctx.trace)) });
      }),
  );

  server.registerTool(
    'delete_session',
    {
      title: 'Delete a sandbox session',
      description:
        'Deletes a sandbox session and everything in it (files, processes). Use it when the task is done.',
      inputSchema: { session, namespace },
    },
    (args) =>
      guarded(async () => {
        await ctx.sessions.delete(ns(args.namespace), args.session, ctx.trace);
        return jsonToolResult({ deleted: args.session });
      }),
  );
  registerProcessTools(server, { processes: ctx.processes, ns, guarded, call, session, namespace });
  if (ctx.code) registerCodeTools(server, { code: ctx.code, ns, guarded, call, session, namespace });
  if (ctx.egress?.rules) {
    const { rules, audit } = ctx.egress;
    registerEgressTools(server, {
      rules,
      audit,
      actor: ctx.principal.keyId,
      ns,
      guarded,
      session,
      namespace,
    });
  }
  if (ctx.snapshots)
    registerSnapshotTools(server, {
      snapshots: ctx.snapshots,
      principal: ctx.principal,
      ns,
      guarded,
      session,
      namespace,
    });
  return server;
}
