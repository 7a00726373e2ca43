// The two per-request series (chasqui_http_requests_total, chasqui_http_request_duration_seconds)
// kept in plain maps and handed to the registry at scrape time. prom-client's labelled inc() and
// observe() validate and hash their label objects on every call (≈2–5 µs a request here, against
// ≈20 µs of server CPU for a GET /me); this costs two map lookups and a few additions.
import type { Metric } from 'prom-client';

/** prom-client's default buckets (seconds). */
const BOUNDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

interface Series {
  method: string;
  route: string;
  byStatus: Map<number, number>;
  /** Observations per bucket (not cumulative); above the last bound only in `count`. */
  buckets: number[];
  sum: number;
  count: number;
}

type Value = { labels: Record<string, string | number>; value: number; metricName?: string };

export class HttpSeries {
  /** route → method → series: routes and methods are a set the code bounds. */
  private readonly series = new Map<string, Map<string, Series>>();

  record(method: string, route: string, status: number, seconds: number): void {
    let byMethod = this.series.get(route);
    if (byMethod === undefined) {
      byMethod = new Map();
      this.series.set(route, byMethod);
    }
    let s = byMethod.get(method);
    if (s === undefined) {
      s = { method, route, byStatus: new Map(), buckets: BOUNDS.map(() => 0), sum: 0, count: 0 };
      byMethod.set(method, s);
    }
    s.byStatus.set(status, (s.byStatus.get(status) ?? 0) + 1);
    s.count += 1;
    s.sum += seconds;
    let i = 0;
    while (i < BOUNDS.length && seconds > BOUNDS[i]!) i++;
    if (i < BOUNDS.length) s.buckets[i]! += 1;
  }

  private *all(): Iterable<Series> {
    for (const byMethod of this.series.values()) yield* byMethod.values();
  }

  /** The two metrics, in the shape the registry formats (what prom-client's own get() returns). */
  metrics(requestsName: string, durationName: string): Metric[] {
    const requests = {
      name: requestsName,
      help: 'HTTP requests answered, by method, route pattern and status',
      type: 'counter',
      aggregator: 'sum',
      get: async () => {
        const values: Value[] = [];
        for (const s of this.all()) {
          for (const [status, n] of s.byStatus) values.push({ labels: { method: s.method, route: s.route, status }, value: n });
        }
        return { name: requests.name, help: requests.help, type: requests.type, aggregator: requests.aggregator, values };
      },
    };
    const durations = {
      name: durationName,
      help: 'Time from the request to its answer, by method and route pattern',
      type: 'histogram',
      aggregator: 'sum',
      get: async () => {
        const values: Value[] = [];
        for (const s of this.all()) {
          const labels = { method: s.method, route: s.route };
          let acc = 0;
          BOUNDS.forEach((le, i) => {
            acc += s.buckets[i]!;
            values.push({ labels: { le, ...labels }, value: acc, metricName: `${durations.name}_bucket` });
          });
          values.push({ labels: { le: '+Inf', ...labels }, value: s.count, metricName: `${durations.name}_bucket` });
          values.push({ labels, value: s.sum, metricName: `${durations.name}_sum` });
          values.push({ labels, value: s.count, metricName: `${durations.name}_count` });
        }
        return { name: durations.name, help: durations.help, type: durations.type, aggregator: durations.aggregator, values };
      },
    };
    return [requests, durations] as unknown as Metric[];
  }
}
