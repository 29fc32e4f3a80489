/**
 * GET /v2/sandboxes: the filters (metadata, state, template, start time), the order and the pages
 * of E2B's list, over the sessions of the caller's namespaces. Pure.
 */
import type { SandboxSession } from '@sandbox-platform/api';

import { ProblemError } from '../../errors.js';
import { listedAnswer, metadataOf, type ListedAnswer } from './views.js';
import { templateOf } from './templates.js';

/** The query E2B's SDKs send. */
export interface ListQuery {
  /** `k=v&k2=v2`, keys and values URL-encoded (the SDKs encode them before joining). */
  metadata?: string;
  /** Comma-separated states: running, paused. */
  state?: string;
  order?: 'asc' | 'desc';
  startedAfter?: string;
  template?: string;
  limit?: number;
  nextToken?: string;
}

/** Largest page. */
export const MAX_PAGE = 1000;
const DEFAULT_PAGE = 100;

function decode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** The metadata pairs a sandbox must have. */
export function metadataFilter(query: string | undefined): Array<[string, string]> {
  if (!query) return [];
  return [...new URLSearchParams(query)].map(([k, v]) => [decode(k), decode(v)]);
}

function states(q: string | undefined): Set<string> {
  const wanted = (q ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const s of wanted) {
    if (s !== 'running' && s !== 'paused')
      throw new ProblemError('invalid-request', `unknown state ${JSON.stringify(s)}`);
  }
  return new Set(wanted.length > 0 ? wanted : ['running', 'paused']);
}

function keep(
  a: ListedAnswer,
  s: SandboxSession,
  q: ListQuery,
  filters: { meta: Array<[string, string]>; states: Set<string>; after: number },
): boolean {
  if (!filters.states.has(a.state)) return false;
  if (q.template && templateOf(s.spec) !== q.template) return false;
  if (Date.parse(a.startedAt) < filters.after) return false;
  const meta = metadataOf(s);
  return filters.meta.every(([k, v]) => meta[k] === v);
}

/** One page of the list, and the token of the next one when there is more. */
export function listPage(
  sessions: readonly SandboxSession[],
  q: ListQuery,
  now: number,
): { items: ListedAnswer[]; nextToken?: string } {
  const after = q.startedAfter ? Date.parse(q.startedAfter) : -Infinity;
  if (Number.isNaN(after)) throw new ProblemError('invalid-request', 'startedAfter must be an RFC 3339 time');
  const filters = { meta: metadataFilter(q.metadata), states: states(q.state), after };
  const dir = q.order === 'asc' ? 1 : -1;
  const all = sessions
    .map((s) => ({ s, a: listedAnswer(s, now) }))
    .filter(({ s, a }) => keep(a, s, q, filters))
    .map(({ a }) => a)
    .sort(
      (x, y) =>
        dir * (Date.parse(x.startedAt) - Date.parse(y.startedAt)) || x.sandboxID.localeCompare(y.sandboxID),
    );
  const limit = Math.min(Math.max(1, q.limit ?? DEFAULT_PAGE), MAX_PAGE);
  let start = 0;
  if (q.nextToken) {
    const last = Buffer.from(q.nextToken, 'base64url').toString('utf8');
    const i = all.findIndex((a) => a.sandboxID === last);
    if (i < 0)
      throw new ProblemError(
        'invalid-request',
        'nextToken names no sandbox of this list (it may have ended)',
      );
    start = i + 1;
  }
  const items = all.slice(start, start + limit);
  const more = start + limit < all.length;
  return more
    ? { items, nextToken: Buffer.from(items[items.length - 1]!.sandboxID).toString('base64url') }
    : { items };
}
