/**
 * MCP tools for egress rules and the audit trail (issue 30, docs/egress.md): set_egress replaces a
 * session's rules through the API server (CEL and the egress policy judge it, as for REST), and
 * verify_audit / read_audit answer from the audit service. For the calling API key only.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { AUDIT_KINDS } from '@sandbox-platform/api';
import { z } from 'zod';

import type { AuditSink } from '../audit/client.js';
import type { EgressRuleWriter, EgressSpec } from '../audit/egress-writer.js';
import { ProblemError } from '../errors.js';
import { jsonToolResult } from './format.js';

/** What the egress tools need from the tool set. */
export interface EgressToolDeps {
  rules: EgressRuleWriter;
  audit?: AuditSink;
  actor: string;
  ns: (requested: string | undefined) => string;
  guarded: (fn: () => Promise<CallToolResult>) => Promise<CallToolResult>;
  session: z.ZodTypeAny;
  namespace: z.ZodTypeAny;
}

const rule = z.object({
  host: z
    .string()
    .min(1)
    .max(253)
    .describe('A lowercase host name (pypi.org) or *.suffix (*.pythonhosted.org)'),
  ports: z
    .array(z.number().int().min(1).max(65535))
    .max(16)
    .optional()
    .describe('Ports (default 80 and 443)'),
});

/** Registers set_egress, read_audit and verify_audit. */
export function registerEgressTools(server: McpServer, d: EgressToolDeps): void {
  const { session, namespace } = d;
  const sink = (): AuditSink => {
    if (!d.audit) throw new ProblemError('not-supported', 'the audit trail is off on this gateway');
    return d.audit;
  };
  server.registerTool(
    'set_egress',
    {
      title: 'Set the hosts a sandbox may reach',
      description:
        "Replaces a sandbox session's egress rules: the hosts (and ports) it may reach through the platform's egress proxy " +
        '(HTTP_PROXY / HTTPS_PROXY); everything else is refused. Takes effect within a second. The platform may refuse hosts ' +
        'its policy does not allow for the namespace. Rules with credentials are set through the API, not here.',
      inputSchema: {
        session,
        allow: z.array(rule).max(64).describe('The allowed hosts'),
        inheritNamespaceDefaults: z
          .boolean()
          .optional()
          .describe("Also allow the namespace's default hosts (default true)"),
        namespace,
      },
    },
    (args: {
      session: string;
      allow: Array<{ host: string; ports?: number[] }>;
      inheritNamespaceDefaults?: boolean;
      namespace?: string;
    }) =>
      d.guarded(async () => {
        const namespaceName = d.ns(args.namespace);
        // The generated type spells maxItems as tuples; the zod schema bounds the same lengths.
        const egress = {
          rules: args.allow,
          inheritNamespaceDefaults: args.inheritNamespaceDefaults ?? true,
        } as EgressSpec;
        const updated = await d.rules.replace(namespaceName, args.session, egress);
        if (!updated) throw new ProblemError('session-not-found', `session ${args.session} not found`);
        d.audit?.record({
          time: new Date().toISOString(),
          namespace: namespaceName,
          session: args.session,
          kind: AUDIT_KINDS.egressRules,
          actor: d.actor,
          outcome: 'ok',
          detail: { via: 'mcp', rules: args.allow.length, hosts: args.allow.map((r) => r.host).join(',') },
        });
        return jsonToolResult({ session: args.session, egress: updated.spec.egress ?? {} });
      }),
  );
  server.registerTool(
    'read_audit',
    {
      title: 'Read the audit trail of a sandbox',
      description:
        "Returns a sandbox session's audit records, oldest first: commands run, files written, processes started, terminals " +
        'opened, port requests, and every connection out of the sandbox (allowed or denied, host, bytes).',
      inputSchema: {
        session,
        afterSeq: z.number().int().min(0).optional().describe('Only records after this seq (default 0)'),
        limit: z.number().int().min(1).max(200).optional().describe('Most records (default 50)'),
        namespace,
      },
    },
    (args: { session: string; afterSeq?: number; limit?: number; namespace?: string }) =>
      d.guarded(async () =>
        jsonToolResult({
          ...(await sink().records(d.ns(args.namespace), args.session, {
            afterSeq: args.afterSeq ?? 0,
            limit: args.limit ?? 50,
          })),
        }),
      ),
  );
  server.registerTool(
    'verify_audit',
    {
      title: "Verify a sandbox's audit trail",
      description:
        "Recomputes the hash chain of a sandbox session's audit records; valid false names the first altered record.",
      inputSchema: { session, namespace },
    },
    (args: { session: string; namespace?: string }) =>
      d.guarded(async () => jsonToolResult({ ...(await sink().verify(d.ns(args.namespace), args.session)) })),
  );
}
