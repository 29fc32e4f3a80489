#!/usr/bin/env node
// Reads rendered manifests on stdin and writes the `spec` of the one PrometheusRule as a
// Prometheus rule file (what `promtool check rules` and `promtool test rules` read) on stdout.
import { parseAllDocuments, stringify } from 'yaml';

let input = '';
process.stdin.setEncoding('utf8');
for await (const chunk of process.stdin) input += chunk;
const rules = parseAllDocuments(input)
  .map((d) => d.toJS())
  .filter((o) => o?.kind === 'PrometheusRule');
if (rules.length !== 1) {
  console.error(`rules-from-manifest: expected one PrometheusRule, found ${rules.length}`);
  process.exit(1);
}
process.stdout.write(stringify(rules[0].spec, { lineWidth: 0 }));
