#!/usr/bin/env node
// Writes kubeconform-compatible JSON schemas with no network: the built-in kinds come from the
// OpenAPI v2 document of the pinned Kubernetes module (api/openapi-spec/swagger.json in the Go
// module cache), the custom resources from our own CRD files. Every schema is standalone (all
// $refs inlined) and strict (objects reject unknown fields), like kubeconform's
// "-standalone-strict" flavour.
//
// usage: openapi2jsonschema.mjs --swagger <swagger.json> --out <dir> [--crd <file.yaml>]...
// Layout (what `-schema-location '<dir>/{{.ResourceKind}}{{.KindSuffix}}.json'` expects):
//   <dir>/pod-v1.json, <dir>/deployment-apps-v1.json, <dir>/sandboxsession-sandbox-v1alpha1.json
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

function parseArgs(argv) {
  const args = { crd: [] };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    if (key === 'crd') args.crd.push(argv[i + 1]);
    else args[key] = argv[i + 1];
  }
  if (!args.swagger || !args.out) throw new Error('usage: --swagger <file> --out <dir> [--crd <file>]...');
  return args;
}

// Types whose JSON form is looser than their OpenAPI declaration.
const SPECIAL = {
  'io.k8s.apimachinery.pkg.util.intstr.IntOrString': { oneOf: [{ type: 'string' }, { type: 'integer' }] },
  'io.k8s.apimachinery.pkg.api.resource.Quantity': { oneOf: [{ type: 'string' }, { type: 'number' }] },
};

/** Inlines every $ref and makes objects strict. `seen` stops recursive types (JSONSchemaProps). */
function resolve(node, defs, seen = new Set()) {
  if (Array.isArray(node)) return node.map((n) => resolve(n, defs, seen));
  if (!node || typeof node !== 'object') return node;
  if (node.$ref) {
    const name = node.$ref.replace('#/definitions/', '');
    if (SPECIAL[name]) return SPECIAL[name];
    if (seen.has(name)) return {}; // recursive type: accept anything below this point
    return resolve(defs[name], defs, new Set([...seen, name]));
  }
  const out = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === 'x-kubernetes-group-version-kind' || k.startsWith('x-kubernetes-')) continue;
    out[k] = k === 'properties' ? mapValues(v, (p) => resolve(p, defs, seen)) : resolve(v, defs, seen);
  }
  return strict(out);
}

function strict(schema) {
  if (schema.properties && schema.additionalProperties === undefined) schema.additionalProperties = false;
  if (schema.format === 'int-or-string') return { oneOf: [{ type: 'string' }, { type: 'integer' }] };
  return schema;
}

function mapValues(obj, fn) {
  return Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, fn(v)]));
}

/** CRD openAPIV3Schema -> JSON schema: int-or-string, preserve-unknown-fields, strict objects. */
function crdSchema(node) {
  if (Array.isArray(node)) return node.map(crdSchema);
  if (!node || typeof node !== 'object') return node;
  const out = {};
  for (const [k, v] of Object.entries(node)) {
    if (k.startsWith('x-kubernetes-')) continue;
    out[k] = k === 'properties' ? mapValues(v, crdSchema) : crdSchema(v);
  }
  if (node['x-kubernetes-int-or-string']) {
    delete out.anyOf;
    delete out.type;
    out.oneOf = [{ type: 'string' }, { type: 'integer' }];
  }
  if (out.type === 'object' && out.properties && !node['x-kubernetes-preserve-unknown-fields']) {
    out.additionalProperties ??= false;
  }
  return out;
}

function fileName(kind, group, version) {
  const g = group ? `-${group.split('.')[0]}` : '';
  return `${kind.toLowerCase()}${g}-${version}.json`;
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const swagger = JSON.parse(readFileSync(args.swagger, 'utf8'));
  const defs = swagger.definitions;
  mkdirSync(args.out, { recursive: true });
  let count = 0;
  for (const [name, def] of Object.entries(defs)) {
    for (const gvk of def['x-kubernetes-group-version-kind'] ?? []) {
      const schema = resolve(def, defs, new Set([name]));
      schema.$schema = 'http://json-schema.org/schema#';
      writeFileSync(join(args.out, fileName(gvk.kind, gvk.group, gvk.version)), JSON.stringify(schema));
      count++;
    }
  }
  for (const file of args.crd) {
    for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
      const crd = doc.toJS();
      if (crd?.kind !== 'CustomResourceDefinition') continue;
      for (const v of crd.spec.versions) {
        const schema = crdSchema(v.schema.openAPIV3Schema);
        // metadata is validated by the API server, not by the CRD schema.
        schema.properties.metadata = { type: 'object' };
        writeFileSync(
          join(args.out, fileName(crd.spec.names.kind, crd.spec.group, v.name)),
          JSON.stringify(schema),
        );
        count++;
      }
    }
  }
  console.log(`openapi2jsonschema: wrote ${count} schemas to ${args.out}`);
}

main();
