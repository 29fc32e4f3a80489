/**
 * Limits the code relies on and the CRD enforces must be the same number: the total env cap of the
 * CEL rule and ENV_MAX_TOTAL_BYTES (which the gateway can check before the API server does).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from '@jest/globals';
import { parse } from 'yaml';

import { ENV_MAX_TOTAL_BYTES } from '../../src/constants.js';
import { sandboxSessionSchema } from '../../src/generated/schema.js';

const CRD = join(dirname(fileURLToPath(import.meta.url)), '../../sandboxsessions.sandbox.dev.yaml');

interface Rule {
  rule: string;
  message: string;
}

describe('the spec.env total size rule', () => {
  const crd = parse(readFileSync(CRD, 'utf8')) as {
    spec: { versions: Array<{ schema: { openAPIV3Schema: typeof sandboxSessionSchema } }> };
  };
  const env = crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec.properties.env as unknown as {
    'x-kubernetes-validations': Rule[];
  };

  it('caps names and values together at ENV_MAX_TOTAL_BYTES, in UTF-8 bytes', () => {
    const [rule] = env['x-kubernetes-validations'];
    expect(rule?.rule).toMatch(new RegExp(`\\.sum\\(\\) <= ${ENV_MAX_TOTAL_BYTES}$`));
    expect(rule?.rule).toContain('size(bytes(e.name))');
    expect(rule?.rule).toContain('size(bytes(e.value))');
    expect(rule?.message).toContain(`at most ${ENV_MAX_TOTAL_BYTES} bytes`);
  });

  it('is in the generated schema too (make generate ran)', () => {
    const generated = sandboxSessionSchema.properties.spec.properties.env as unknown as {
      'x-kubernetes-validations': Rule[];
    };
    expect(generated['x-kubernetes-validations']).toEqual(env['x-kubernetes-validations']);
  });
});
