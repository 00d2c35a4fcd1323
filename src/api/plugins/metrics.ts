import type { FastifyInstance } from "fastify";

/** Latency buckets in seconds: from sub-millisecond answers to slow uploads. */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

interface Series {
  labels: string;
  count: number;
  sum: number;
  buckets: number[];
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/**
 * Prometheus metrics of the HTTP service: request counts and latencies by method, route template
 * and status. Unmatched paths share the route label `unmatched`, so that scanners cannot grow the
 * number of series without bound.
 */
export class HttpMetrics {
  private readonly series = new Map<string, Series>();
  private readonly startedAt = Date.now();

  observe(method: string, route: string, status: number, seconds: number): void {
    const labels = `method="${escapeLabel(method)}",route="${escapeLabel(route)}",status="${status}"`;
    let entry = this.series.get(labels);
    if (!entry) {
      entry = { labels, count: 0, sum: 0, buckets: BUCKETS.map(() => 0) };
      this.series.set(labels, entry);
    }
    entry.count += 1;
    entry.sum += seconds;
    for (let i = 0; i < BUCKETS.length; i++) {
      if (seconds <= (BUCKETS[i] ?? Infinity)) entry.buckets[i] = (entry.buckets[i] ?? 0) + 1;
    }
  }

  render(): string {
    const lines: string[] = [
      "# HELP mainline_http_requests_total HTTP requests answered, by method, route and status.",
      "# TYPE mainline_http_requests_total counter",
    ];
    const all = [...this.series.values()].sort((a, b) => a.labels.localeCompare(b.labels));
    for (const s of all) lines.push(`mainline_http_requests_total{${s.labels}} ${s.count}`);
    lines.push(
      "# HELP mainline_http_request_duration_seconds Time to answer HTTP requests.",
      "# TYPE mainline_http_request_duration_seconds histogram",
    );
    for (const s of all) {
      BUCKETS.forEach((bound, i) => {
        lines.push(
          `mainline_http_request_duration_seconds_bucket{${s.labels},le="${bound}"} ${s.buckets[i] ?? 0}`,
        );
      });
      lines.push(`mainline_http_request_duration_seconds_bucket{${s.labels},le="+Inf"} ${s.count}`);
      lines.push(`mainline_http_request_duration_seconds_sum{${s.labels}} ${s.sum}`);
      lines.push(`mainline_http_request_duration_seconds_count{${s.labels}} ${s.count}`);
    }
    const memory = process.memoryUsage();
    lines.push(
      "# HELP process_start_time_seconds Start time of the process since the Unix epoch.",
      "# TYPE process_start_time_seconds gauge",
      `process_start_time_seconds ${Math.floor(this.startedAt / 1000)}`,
      "# HELP process_resident_memory_bytes Resident memory size in bytes.",
      "# TYPE process_resident_memory_bytes gauge",
      `process_resident_memory_bytes ${memory.rss}`,
      "# HELP nodejs_heap_used_bytes V8 heap in use, in bytes.",
      "# TYPE nodejs_heap_used_bytes gauge",
      `nodejs_heap_used_bytes ${memory.heapUsed}`,
    );
    return lines.join("\n") + "\n";
  }
}

export function installMetrics(app: FastifyInstance, metrics: HttpMetrics): void {
  app.addHook("onResponse", (request, reply, done) => {
    const route = request.routeOptions.url ?? "unmatched";
    metrics.observe(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
  app.get("/metrics", { schema: { hide: true } }, (_request, reply) => {
    void reply.type("text/plain; version=0.0.4; charset=utf-8").send(metrics.render());
  });
}
