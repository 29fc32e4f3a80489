/**
 * Egress and audit commands (docs/egress.md): `sbx egress get|set NAME` and `sbx audit NAME` /
 * `sbx audit verify NAME`.
 */
import type { AuditRecord, Egress, EgressRule } from '@sandbox-platform/client';

import { UsageError } from '../errors.js';
import { write, type Context } from '../io.js';
import { renderValue } from '../output.js';

/** `--allow host[:port[,port...]]` as a rule. */
export function parseAllow(value: string): EgressRule {
  const [host, ports] = value.split(':');
  if (!host || !/^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(host)) {
    throw new UsageError(
      `--allow ${value}: expected a lowercase host or *.suffix, optionally :port[,port...]`,
    );
  }
  if (ports === undefined) return { host };
  const list = ports.split(',').map(Number);
  if (list.some((p) => !Number.isInteger(p) || p < 1 || p > 65535))
    throw new UsageError(`--allow ${value}: bad port`);
  return { host, ports: list };
}

/** `egress get NAME` | `egress set NAME --allow H[:P]... [--no-defaults]`. */
export async function egress(ctx: Context): Promise<number> {
  const [action, name, ...extra] = ctx.args;
  if (!name || extra.length || (action !== 'get' && action !== 'set')) {
    throw new UsageError(
      'usage: egress get NAME | egress set NAME --allow HOST[:PORT,...]... [--no-defaults]',
    );
  }
  const client = ctx.client();
  const opts = { signal: ctx.io.signal };
  let result: Egress;
  if (action === 'get') {
    result = await client.getEgress(name, opts);
  } else {
    const allow = (ctx.flags.allow as string[] | undefined) ?? [];
    result = await client.setEgress(
      name,
      { rules: allow.map(parseAllow), inheritNamespaceDefaults: !ctx.flags['no-defaults'] },
      opts,
    );
  }
  const out = ctx.settings.output;
  if (out === 'json' || out === 'yaml') await write(ctx.io.stdout, renderValue(out, result));
  else await write(ctx.io.stdout, egressTable(result));
  return 0;
}

function egressTable(e: Egress): string {
  const lines = (e.rules ?? []).map(
    (r) =>
      `${r.host}\t${(r.ports ?? [80, 443]).join(',')}` +
      (r.methods ? `\tmethods=${r.methods.join(',')}` : '') +
      (r.pathPrefixes ? `\tpaths=${r.pathPrefixes.join(',')}` : '') +
      (r.injectHeaders ? `\tinjects=${r.injectHeaders.map((h) => h.name).join(',')}` : ''),
  );
  lines.push(`namespace defaults: ${e.inheritNamespaceDefaults === false ? 'no' : 'yes'}`);
  return `${lines.join('\n')}\n`;
}

const structured = (out: string): out is 'json' | 'yaml' => out === 'json' || out === 'yaml';

/** `audit NAME [--after N] [--limit N]` | `audit verify NAME` (exit 1 when the chain is broken). */
export async function audit(ctx: Context): Promise<number> {
  const [first, second, ...extra] = ctx.args;
  if (first === 'verify') {
    if (!second || extra.length) throw new UsageError('usage: audit verify NAME');
    return verifyCommand(ctx, second);
  }
  if (!first || second !== undefined)
    throw new UsageError('usage: audit NAME [--after N] [--limit N] | audit verify NAME');
  const page = await ctx
    .client()
    .auditRecords(
      first,
      { afterSeq: Number(ctx.flags.after ?? 0), limit: Number(ctx.flags.limit ?? 100) },
      { signal: ctx.io.signal },
    );
  const out = ctx.settings.output;
  await write(ctx.io.stdout, structured(out) ? renderValue(out, page) : auditTable(page.records));
  return 0;
}

async function verifyCommand(ctx: Context, name: string): Promise<number> {
  const v = await ctx.client().verifyAudit(name, { signal: ctx.io.signal });
  const out = ctx.settings.output;
  const text = v.valid
    ? `valid: ${v.records} records (seq ${v.firstSeq}..${v.lastSeq})\n`
    : `BROKEN at seq ${v.brokenAt}: ${v.reason} (${v.records} records)\n`;
  await write(ctx.io.stdout, structured(out) ? renderValue(out, v) : text);
  return v.valid ? 0 : 1;
}

function auditTable(records: AuditRecord[]): string {
  return records
    .map((r) => {
      const d = Object.entries(r.detail)
        .filter(([, v]) => v !== null)
        .map(([k, v]) => `${k}=${String(v)}`)
        .join(' ');
      return `${r.seq}\t${r.time}\t${r.kind}\t${r.outcome}\t${r.actor}\t${d}\n`;
    })
    .join('');
}
