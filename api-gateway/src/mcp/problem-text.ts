/** One-line descriptions of gateway problems for MCP tool errors. */
import { isProblemError, type ProblemError } from '../errors.js';

export { isProblemError };

/** "error session-not-ready (503): ... Retry in 2 s." */
export function toProblemText(p: ProblemError): string {
  if (p.status >= 500 && p.slug === 'internal')
    return 'error internal (500): internal error; try again later';
  const retry = p.retryAfterSeconds !== undefined ? ` Retry in ${p.retryAfterSeconds} s.` : '';
  return `error ${p.slug} (${p.status}): ${p.detail ?? p.message}.${retry}`;
}
