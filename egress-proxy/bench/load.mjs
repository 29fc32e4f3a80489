// The load generator of bench-egress (an ES module, node:* only: it is also uploaded into a
// sandbox and run there). HTTP/1.1 keep-alive GETs to `url`, directly or through an HTTP proxy
// (absolute-form request line), first sequentially (latency: p50/p90/p99 of `n` requests after
// `warm` unmeasured ones), then `conc` at a time for `seconds` (throughput). Prints one JSON line.
// Usage: node load.mjs <url> <proxy host:port | -> <n> <conc> <seconds>
import http from 'node:http';
const [url, proxy, nArg, concArg, secArg] = process.argv.slice(2);
const target = new URL(url);
const n = Number(nArg);
const conc = Number(concArg);
const seconds = Number(secArg);
const warm = Math.min(200, n);
const via =
  proxy && proxy !== '-' ? { host: proxy.split(':')[0], port: Number(proxy.split(':')[1]) } : undefined;
const agent = new http.Agent({ keepAlive: true, maxSockets: conc });
const options = via
  ? { host: via.host, port: via.port, path: url, headers: { host: target.host }, agent }
  : { host: target.hostname, port: Number(target.port || 80), path: target.pathname, agent };
function once() {
  return new Promise((resolve, reject) => {
    const req = http.get(options, (res) => {
      res.on('data', () => {});
      res.on('end', () =>
        res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`)),
      );
    });
    req.on('error', reject);
  });
}
(async () => {
  const times = [];
  for (let i = 0; i < warm + n; i++) {
    const t = process.hrtime.bigint();
    await once();
    if (i >= warm) times.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  times.sort((a, b) => a - b);
  const q = (p) => times[Math.min(times.length - 1, Math.floor(p * times.length))];
  let done = 0;
  const end = Date.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: conc }, async () => {
      while (Date.now() < end) {
        await once();
        done++;
      }
    }),
  );
  console.log(
    JSON.stringify({
      p50: q(0.5),
      p90: q(0.9),
      p99: q(0.99),
      n,
      rps: done / seconds,
      conc,
      seconds,
      requests: warm + n + done,
    }),
  );
  agent.destroy();
})().catch((err) => {
  console.error(err.message);
  process.exit(1);
});
