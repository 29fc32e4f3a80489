/**
 * The MCP exec tool's zod shape is written by hand (its descriptions are for a language model, it
 * offers a subset of the fields, and its listed JSON Schema must stay as it is); the REST body
 * comes from the public exec contract (crds/src/public/exec.ts). This test keeps the two in step:
 * every field the tool takes is a field of the REST body with the same type, enum and, where the
 * tool states one, the same bound; a REST field the tool does not take must be listed here.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { execBody } from '../../../src/routes/exec/schemas.js';
import { KEYS, auth, buildTestApp, type TestApp } from '../../helpers/app.js';

/** REST fields the exec tool leaves out on purpose (a model needs neither). */
const NOT_OFFERED = ['env', 'waitSeconds'];
/** The tool's own arguments, not part of the exec body. */
const TOOL_ONLY = ['session', 'namespace'];

type JsonSchema = Record<string, unknown> & { properties?: Record<string, Record<string, unknown>> };

function withoutDescription(schema: Record<string, unknown>): Record<string, unknown> {
  const { description: _ignored, ...rest } = schema;
  return rest;
}

describe('the MCP exec tool and the public exec contract', () => {
  let t: TestApp;
  let tool: JsonSchema;
  beforeAll(async () => {
    t = await buildTestApp();
    const res = await t.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: {
        ...auth(KEYS.a),
        accept: 'application/json, text/event-stream',
        'content-type': 'application/json',
      },
      payload: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.statusCode).toBe(200);
    const text = res.body.startsWith('{') ? res.body : /^data: (.*)$/m.exec(res.body)![1]!;
    const tools = (
      JSON.parse(text) as { result: { tools: Array<{ name: string; inputSchema: JsonSchema }> } }
    ).result.tools;
    tool = tools.find((x) => x.name === 'exec')!.inputSchema;
  });
  afterAll(async () => {
    await t.app.close();
  });

  it('takes only fields of the REST exec body, with their types, enums and bounds', () => {
    const rest = execBody(t.config.exec).properties as unknown as Record<string, Record<string, unknown>>;
    const fields = Object.keys(tool.properties!).filter((k) => !TOOL_ONLY.includes(k));
    expect(fields.length).toBeGreaterThan(0);
    for (const field of fields) {
      const mine = withoutDescription(tool.properties![field]!);
      const theirs = withoutDescription(rest[field] ?? {});
      expect({ field, keys: Object.keys(theirs).length > 0 }).toEqual({ field, keys: true });
      // The tool may leave a bound to the agent (cwd), never state a different one.
      for (const [keyword, value] of Object.entries(mine)) {
        expect({ field, keyword, value }).toEqual({ field, keyword, value: theirs[keyword] });
      }
      expect({ field, type: mine.type, enum: mine.enum }).toEqual({
        field,
        type: theirs.type,
        enum: theirs.enum,
      });
    }
    expect(tool.required).toEqual(expect.arrayContaining(['command']));
  });

  it('leaves out only the REST fields listed as not offered', () => {
    const rest = Object.keys(execBody(t.config.exec).properties);
    const offered = Object.keys(tool.properties!);
    expect(rest.filter((k) => !offered.includes(k))).toEqual(NOT_OFFERED);
  });
});
