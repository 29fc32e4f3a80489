/** How tool results read to a language model: short, labelled, complete. */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

import type { ExecResult } from '../exec/types.js';
import { isProblemError, toProblemText } from './problem-text.js';

/** Renders an exec result; a non-zero exit is a tool error carrying the output (not a protocol error). */
export function execToolResult(r: ExecResult): CallToolResult {
  const lines = [`exit code: ${r.exitCode}${r.timedOut ? ' (timed out)' : ''} (${r.durationMs} ms)`];
  if (r.shellReset)
    lines.push(
      'note: the shell was restarted before this command; earlier shell state (cwd, variables) is lost',
    );
  if (r.truncated) lines.push('note: output exceeded the cap and was truncated');
  lines.push(`--- stdout${r.stdoutEncoding === 'base64' ? ' (base64, not valid UTF-8)' : ''} ---`, r.stdout);
  lines.push(`--- stderr${r.stderrEncoding === 'base64' ? ' (base64, not valid UTF-8)' : ''} ---`, r.stderr);
  return {
    content: [{ type: 'text', text: lines.join('\n') }],
    structuredContent: { ...r },
    isError: r.exitCode !== 0 || r.timedOut,
  };
}

/** A JSON value as a tool result (text for the model, structured for programs). */
export function jsonToolResult(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value, null, 2) }], structuredContent: value };
}

/**
 * A failure as a tool error the model can act on: a gateway problem (unknown session, not ready,
 * policy) with its detail; anything else with a generic text (the caller logs the cause).
 */
export function errorToolResult(err: unknown): CallToolResult {
  const text = isProblemError(err)
    ? toProblemText(err)
    : 'error internal (500): internal error; try again later';
  return { content: [{ type: 'text', text }], isError: true };
}
