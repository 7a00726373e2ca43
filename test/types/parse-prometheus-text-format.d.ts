// The parser the metrics tests read /metrics with (it ships no types): prom2json's shape.
declare module 'parse-prometheus-text-format' {
  export interface PromSample {
    labels?: Record<string, string>;
    /** Counters and gauges. */
    value?: string;
    /** Histograms: cumulative counts by upper bound, their count and sum. */
    buckets?: Record<string, string>;
    count?: string;
    sum?: string;
  }
  export interface PromFamily {
    name: string;
    help: string;
    type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
    metrics: PromSample[];
  }
  export default function parsePrometheusTextFormat(text: string): PromFamily[];
}
