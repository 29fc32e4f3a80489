/**
 * The SandboxPool CRD copies the SandboxSession spec's Pod-shaping fields into its template: they
 * must stay equal, or a pooled session would accept what a cold one refuses (or the reverse). And
 * the pool-name limit of the CEL rule is the one warm Pod names are built with.
 */
import { describe, expect, it } from '@jest/globals';

import { POOL_NAME_MAX, POOL_POD_SUFFIX_LENGTH } from '../../src/pool.js';
import { sandboxPoolSchema } from '../../src/generated/pool-schema.js';
import { sandboxSessionSchema } from '../../src/generated/schema.js';

const SHAPING = [
  'image',
  'imagePullPolicy',
  'resources',
  'runtimeClassName',
  'nodeSelector',
  'tolerations',
] as const;

describe('the pool template', () => {
  const template = sandboxPoolSchema.properties.spec.properties.template.properties as Record<
    string,
    unknown
  >;
  const session = sandboxSessionSchema.properties.spec.properties as Record<string, unknown>;

  it.each(SHAPING)('declares %s exactly as the session spec does', (field) => {
    expect(template[field]).toEqual(session[field]);
  });

  it('declares env as the session spec does, with plain values only (a warm Pod never reads a Secret)', () => {
    type EnvSchema = {
      description: string;
      items: { properties: Record<string, unknown>; 'x-kubernetes-validations'?: unknown };
    };
    const { description: _t, ...poolEnv } = template.env as EnvSchema;
    const { description: _s, ...sessionEnv } = session.env as EnvSchema;
    const { valueFrom, ...plainProperties } = sessionEnv.items.properties;
    expect(valueFrom).toBeDefined();
    expect(poolEnv.items.properties).toEqual(plainProperties);
    expect(Object.keys(poolEnv.items.properties)).toEqual(['name', 'value']);
    const { items: _pi, ...poolRest } = poolEnv;
    const { items: _si, ...sessionRest } = sessionEnv;
    expect(poolRest).toEqual(sessionRest);
  });

  it('declares the workspace size exactly as the session spec does, and no persistent workspace', () => {
    const workspace = template.workspace as { properties: Record<string, unknown> };
    const sessionWorkspace = session.workspace as { properties: Record<string, unknown> };
    expect(workspace.properties.sizeLimit).toEqual(sessionWorkspace.properties.sizeLimit);
    expect(Object.keys(workspace.properties)).toEqual(['sizeLimit']);
  });

  it('has no execTransport: a pool is always the Agent transport', () => {
    expect(template.execTransport).toBeUndefined();
  });
});

describe('pool names', () => {
  it('leave room for the warm Pod suffix within a 63-character hostname', () => {
    expect(POOL_NAME_MAX + 1 + POOL_POD_SUFFIX_LENGTH).toBeLessThanOrEqual(63);
    const rule = sandboxPoolSchema['x-kubernetes-validations'][0].rule;
    expect(rule).toContain(`size() <= ${POOL_NAME_MAX}`);
  });

  it('bound spec.poolRef.name of a session to the same limit', () => {
    const poolRef = sandboxSessionSchema.properties.spec.properties.poolRef;
    expect(poolRef.properties.name.maxLength).toBe(POOL_NAME_MAX);
  });
});
