// GET /metrics. A configured GUARDIAN_METRICS_TOKEN is required as a Bearer token (compared in constant time, like
// /admin). The registry behind it is created on the first scrape at the latest (recorder.ts).
import { Hono } from 'hono';
import { bearerTokenMatches } from '../../crypto/bearer-token.ts';
import type { MetricsRecorder } from './recorder.ts';

export function metricsApp(recorder: MetricsRecorder, token: string | undefined): Hono {
  const app = new Hono();
  app.get('/', async (c) => {
    if (token) {
      const presented = /^Bearer\s+(.+)$/i.exec(c.req.header('authorization') ?? '')?.[1];
      if (!presented || !bearerTokenMatches(presented, token))
        return c.json({ error: 'unauthorized' }, 401, { 'www-authenticate': 'Bearer realm="guardian-metrics"' });
    }
    const metrics = await recorder.load();
    if (!metrics) return c.json({ error: 'metrics_unavailable' }, 503);
    return c.body(await metrics.render(), 200, { 'content-type': metrics.registry.contentType });
  });
  return app;
}
