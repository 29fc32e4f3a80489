/**
 * e2e: every metric the chart's Grafana dashboards and alert rules query is served by the running
 * platform: the gateway's /metrics (its metrics Service) and each operator Pod's /metrics (its
 * `metrics` container port; the operator has no Service, the chart's PodMonitor scrapes the Pods)
 * are read over HTTP, their series names taken from the `# TYPE` lines, and the queries' metric
 * names compared (src/monitoring-queries.ts; the unit test monitoring-names does the same against
 * the services' registries).
 *
 * Scraped from the test host (the node), which NetworkPolicies do not restrict, so local cluster
 * only (as gateway-metrics). Needs the chart installed.
 */
import { expect, it } from '@jest/globals';

import { kubeClients, predicate, waitFor } from '../../src/framework/index.js';
import { describeOnLocal } from '../../src/framework/not-run.js';
import {
  dashboardFiles,
  dashboardQueries,
  exposedSeries,
  ruleQueries,
  unknownNames,
} from '../../src/monitoring-queries.js';

const PLATFORM_NS = process.env.E2E_PLATFORM_NAMESPACE ?? 'sandbox-system';
const RELEASE = process.env.E2E_PLATFORM_RELEASE ?? 'sandbox';

/** The body of a 200 answer to GET url (retried for up to 30 s while the target starts). */
function scrape(url: string): Promise<string> {
  return waitFor(
    () => fetch(url).then((r) => (r.status === 200 ? r.text() : '')),
    predicate(`a 200 from ${url}`, (text: string) => text.includes('# TYPE ')),
    { timeoutMs: 30_000, intervalMs: 250 },
  );
}

describeOnLocal("the dashboards' and alerts' metrics on the live /metrics", () => {
  const { core } = kubeClients();

  it('every query names a series the running gateway or operator serves', async () => {
    const service = await core.readNamespacedService({
      name: `${RELEASE}-sandbox-platform-gateway-metrics`,
      namespace: PLATFORM_NS,
    });
    const port = service.spec?.ports?.find((p) => p.name === 'metrics')?.port;
    const gateway = exposedSeries(await scrape(`http://${service.spec!.clusterIP}:${port}/metrics`));

    const pods = await core.listNamespacedPod({
      namespace: PLATFORM_NS,
      labelSelector: `app.kubernetes.io/instance=${RELEASE},app.kubernetes.io/component=operator`,
    });
    const running = pods.items.filter((p) => p.status?.phase === 'Running' && p.status.podIP);
    expect(running.length).toBeGreaterThan(0);
    const operator = new Set<string>();
    for (const pod of running) {
      const metricsPort = pod.spec?.containers[0]?.ports?.find((p) => p.name === 'metrics')?.containerPort;
      expect(metricsPort).toBeDefined();
      for (const name of exposedSeries(await scrape(`http://${pod.status!.podIP}:${metricsPort}/metrics`)))
        operator.add(name);
    }
    // Both were read (a wrong port or an empty answer would leave the comparison below vacuous).
    expect(gateway).toContain('sandbox_gateway_http_request_duration_seconds_count');
    expect(operator).toContain('workqueue_depth');

    const served = new Set([...gateway, ...operator]);
    const queries = [...dashboardFiles().flatMap((f) => dashboardQueries(f)), ...ruleQueries()];
    expect(queries.length).toBeGreaterThan(26);
    expect(unknownNames(queries, served)).toEqual([]);
  });
});
