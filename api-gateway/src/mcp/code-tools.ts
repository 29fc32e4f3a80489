/**
 * MCP tools of the code interpreter (ADR 0033): run_code runs Python in a named context of a
 * session (variables persist between calls) and returns what a model or a person can look at:
 * the output, the value of the last expression, tables, errors with tracebacks, and charts as
 * image content blocks (an MCP client shows them). restart_code_context clears a context. They go
 * through the same code service as the REST routes, for the calling API key only.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { CODE_CONTEXT_PATTERN, DEFAULT_CODE_CONTEXT, MAX_TIMEOUT_SECONDS } from '@sandbox-platform/api';
import { z } from 'zod';

import type { CallOptions } from '../exec/types.js';
import type { CodeResult, CodeService } from '../service/code-service.js';
import { jsonToolResult } from './format.js';

/** Image types passed to the client as image content (base64 as the kernel gives them). */
const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'] as const;
/** Text types a model reads best, in order of preference, for a result or display. */
const TEXT_TYPES = ['text/markdown', 'text/plain', 'application/json', 'text/latex'] as const;
/** Characters of text/html repeated to the model when an output has no plainer text. */
const HTML_CHARS = 8192;

/** What the code tools need from the tool set. */
export interface CodeToolDeps {
  code: CodeService;
  ns: (requested: string | undefined) => string;
  guarded: (fn: () => Promise<CallToolResult>) => Promise<CallToolResult>;
  call: CallOptions;
  session: z.ZodTypeAny;
  namespace: z.ZodTypeAny;
}

const context = z
  .string()
  .regex(new RegExp(CODE_CONTEXT_PATTERN))
  .optional()
  .describe(`Context name (default "${DEFAULT_CODE_CONTEXT}"): each context has its own variables`);

/** Registers run_code and restart_code_context. */
export function registerCodeTools(server: McpServer, d: CodeToolDeps): void {
  const { session, namespace } = d;
  const ref = (args: { session: string; namespace?: string }): { namespace: string; name: string } => ({
    namespace: d.ns(args.namespace),
    name: args.session,
  });
  const hold = d.call.hold;

  server.registerTool(
    'run_code',
    {
      title: 'Run Python code in a sandbox (a Jupyter kernel) and see its results',
      description:
        'Runs Python code in a stateful Jupyter kernel of a sandbox session, like a notebook cell: variables, imports and ' +
        'functions persist between calls of the same context. Returns stdout/stderr, the value of the last expression, ' +
        'displays (pandas tables, HTML, Markdown) and matplotlib charts as images (call plt.show() or leave the figure as the last ' +
        'expression), and exceptions with their traceback. The session must run an image with a Python kernel ' +
        '(create_session with image "localhost/sandbox-platform/sandbox-python:dev" or your platform\'s Python image). ' +
        `Code is interrupted after timeoutSeconds (default 60, at most ${MAX_TIMEOUT_SECONDS}); the context stays usable. ` +
        'Large outputs are bounded and marked truncated.',
      inputSchema: {
        session,
        code: z
          .string()
          .describe(
            'Python source, e.g. "import pandas as pd\\ndf = pd.read_csv(\'data.csv\')\\ndf.describe()"',
          ),
        context,
        timeoutSeconds: z
          .number()
          .int()
          .min(1)
          .max(MAX_TIMEOUT_SECONDS)
          .optional()
          .describe('Seconds before the code is interrupted'),
        namespace,
      },
    },
    (args: {
      session: string;
      code: string;
      context?: string;
      timeoutSeconds?: number;
      namespace?: string;
    }) =>
      d.guarded(async () => {
        const req = {
          code: args.code,
          ...(args.context !== undefined ? { context: args.context } : {}),
          ...(args.timeoutSeconds !== undefined ? { timeoutSeconds: args.timeoutSeconds } : {}),
        };
        const opts = { ...d.call, ...(hold ? { lineHold: (n: number) => hold.tryTake(n) } : {}) };
        return codeToolResult(await d.code.run(ref(args), req, opts));
      }),
  );

  server.registerTool(
    'restart_code_context',
    {
      title: 'Restart a code context (clear its variables)',
      description:
        'Restarts the Jupyter kernel of a context of a sandbox session: every variable and import of that context is gone.',
      inputSchema: { session, context, namespace },
    },
    (args: { session: string; context?: string; namespace?: string }) =>
      d.guarded(async () => {
        const info = await d.code.restart(ref(args), args.context ?? DEFAULT_CODE_CONTEXT, d.call);
        return jsonToolResult({ ...info });
      }),
  );
}

/** A run as a tool result: one text block for the model, one image block per chart. */
export function codeToolResult(r: CodeResult): CallToolResult {
  const lines = [
    `status: ${r.status}${r.contextReset ? ' (new kernel: earlier variables are gone)' : ''} (${r.durationMs} ms)`,
  ];
  if (r.truncated) {
    const d = r.dropped;
    lines.push(
      `note: output was bounded and truncated (dropped ${d.stdout} stdout bytes, ${d.stderr} stderr bytes, ${d.displays} displays)`,
    );
  }
  if (r.stdout) lines.push('--- stdout ---', r.stdout);
  if (r.stderr) lines.push('--- stderr ---', r.stderr);
  const images: CallToolResult['content'] = [];
  r.outputs.forEach((o, i) => {
    const label = o.type === 'result' ? 'result' : `display ${i + 1}`;
    const text = TEXT_TYPES.map((t) => o.data[t]).find((v) => v !== undefined);
    const html = o.data['text/html'];
    if (text !== undefined) lines.push(`--- ${label} ---`, text);
    else if (html !== undefined) lines.push(`--- ${label} (html) ---`, html.slice(0, HTML_CHARS));
    for (const mime of IMAGE_TYPES) {
      const data = o.data[mime];
      if (data !== undefined) {
        images.push({ type: 'image', data, mimeType: mime });
        lines.push(`[${label}: ${mime} image attached]`);
      }
    }
    for (const item of o.omitted ?? [])
      lines.push(`[${label}: ${item.mime} of ${item.bytes} bytes omitted: over the size bound]`);
  });
  if (r.error) lines.push(`--- error: ${r.error.name}: ${r.error.value} ---`, r.error.traceback.join('\n'));
  // The structured copy without image bytes (they are in the image blocks once).
  const outputs = r.outputs.map((o) => ({
    ...o,
    data: Object.fromEntries(
      Object.entries(o.data).map(([m, v]) => [
        m,
        (IMAGE_TYPES as readonly string[]).includes(m) ? `[${v?.length ?? 0} base64 characters]` : v,
      ]),
    ),
  }));
  return {
    content: [{ type: 'text', text: lines.join('\n') }, ...images],
    structuredContent: { ...r, outputs },
    isError: r.status !== 'ok',
  };
}
