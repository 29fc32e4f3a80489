/**
 * Snapshot commands (docs/snapshots.md): `sbx fork NAME [-c N]` (a snapshot of the session and N
 * sessions started from it) and `sbx snapshot create|get|list|delete|wait`.
 */
import type { Snapshot } from '@sandbox-platform/client';

import { UsageError } from '../errors.js';
import { write, type Context } from '../io.js';
import { render, renderValue, age } from '../output.js';
import { seconds } from '../parse.js';

const DEFAULT_WAIT_S = 300;

/** `fork NAME [--count N] [--name F]... [--wait] [--timeout D]`. */
export async function fork(ctx: Context): Promise<number> {
  const [name, ...extra] = ctx.args;
  if (!name || extra.length) throw new UsageError('fork takes one session NAME');
  const names = ctx.flags.name as string[] | undefined;
  const client = ctx.client();
  const opts = { signal: ctx.io.signal };
  const result = await client.fork(name, { count: forkCount(ctx, names), ...(names ? { names } : {}) }, opts);
  let sessions = result.sessions;
  if (ctx.flags.wait) {
    const timeoutMs = waitMs(ctx);
    sessions = [];
    for (const s of result.sessions)
      sessions.push(await client.waitUntilReady(s.name, { timeoutMs, ...opts }));
  }
  const out = ctx.settings.output;
  if (out === 'table')
    await write(
      ctx.io.stderr,
      `snapshot "${result.snapshot.name}" of "${name}"; ${sessions.length} sessions\n`,
    );
  const structured = out === 'json' || out === 'yaml';
  await write(
    ctx.io.stdout,
    structured ? renderValue(out, { snapshot: result.snapshot, sessions }) : render(out, sessions),
  );
  return 0;
}

function forkCount(ctx: Context, names: string[] | undefined): number {
  const count = typeof ctx.flags.count === 'string' ? Number(ctx.flags.count) : (names?.length ?? 1);
  if (!Number.isInteger(count) || count < 1 || count > 10) throw new UsageError('--count must be 1..10');
  return count;
}

/** `snapshot create|get|list|delete|wait ...`. */
export async function snapshot(ctx: Context): Promise<number> {
  const [action, ...rest] = ctx.args;
  switch (action) {
    case 'create':
      return createSnapshot(ctx, rest);
    case 'get':
    case 'list':
    case 'ls':
      return getSnapshots(ctx, rest);
    case 'delete':
    case 'rm':
      return deleteSnapshots(ctx, rest);
    case 'wait':
      if (rest.length !== 1) throw new UsageError('snapshot wait takes one snapshot NAME');
      return show(ctx, [
        await ctx
          .client()
          .waitUntilSnapshotReady(rest[0]!, { timeoutMs: waitMs(ctx), signal: ctx.io.signal }),
      ]);
    default:
      throw new UsageError(
        'snapshot needs an action: create SESSION, get [NAME...], list, delete NAME..., wait NAME',
      );
  }
}

async function createSnapshot(ctx: Context, rest: string[]): Promise<number> {
  const [session, ...extra] = rest;
  if (!session || extra.length) throw new UsageError('snapshot create takes one session NAME');
  const client = ctx.client();
  const name = typeof ctx.flags.name === 'string' ? ctx.flags.name : undefined;
  let s = await client.snapshot(session, name ? { name } : {}, { signal: ctx.io.signal });
  if (ctx.flags.wait)
    s = await client.waitUntilSnapshotReady(s.name, { timeoutMs: waitMs(ctx), signal: ctx.io.signal });
  return show(ctx, [s]);
}

async function getSnapshots(ctx: Context, names: string[]): Promise<number> {
  const client = ctx.client();
  const opts = { signal: ctx.io.signal };
  if (names.length === 0) return show(ctx, await client.listSnapshots(opts));
  const found: Snapshot[] = [];
  for (const n of names) found.push(await client.getSnapshot(n, opts));
  return show(ctx, found);
}

async function deleteSnapshots(ctx: Context, names: string[]): Promise<number> {
  if (names.length === 0) throw new UsageError('snapshot delete needs at least one snapshot NAME');
  const client = ctx.client();
  for (const n of names) {
    await client.deleteSnapshot(n, { signal: ctx.io.signal });
    await write(ctx.io.stdout, `snapshot "${n}" deleted\n`);
  }
  return 0;
}

async function show(ctx: Context, list: Snapshot[]): Promise<number> {
  const out = ctx.settings.output;
  if (out === 'json' || out === 'yaml')
    await write(ctx.io.stdout, renderValue(out, list.length === 1 ? list[0] : list));
  else if (out === 'name') await write(ctx.io.stdout, list.map((s) => `${s.name}\n`).join(''));
  else await write(ctx.io.stdout, snapshotTable(list, new Date()));
  return 0;
}

/** kubectl-style columns of snapshots. */
export function snapshotTable(list: Snapshot[], now: Date): string {
  if (list.length === 0) return 'No snapshots found.\n';
  const header = ['NAME', 'SESSION', 'READY', 'REASON', 'FILES', 'BYTES', 'AGE'];
  const rows = list.map((s) => [
    s.name,
    s.session,
    s.ready ? 'True' : 'False',
    s.reason || '-',
    s.files === undefined ? '-' : String(s.files),
    s.sizeBytes === undefined ? '-' : String(s.sizeBytes),
    s.createdAt ? age(now.getTime() - Date.parse(s.createdAt)) : '-',
  ]);
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return all
    .map(
      (r) =>
        r
          .map((c, i) => c.padEnd(widths[i] ?? 0))
          .join('   ')
          .trimEnd() + '\n',
    )
    .join('');
}

function waitMs(ctx: Context): number {
  return (
    (typeof ctx.flags.timeout === 'string' ? seconds(ctx.flags.timeout, '--timeout') : DEFAULT_WAIT_S) * 1000
  );
}
