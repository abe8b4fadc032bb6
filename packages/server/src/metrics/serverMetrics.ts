// The gRPC server's own numbers as Prometheus metrics, read when scraped: the Pipeline streams
// open (their calls are counted by method with every other call, in rpcMetrics.ts).
import { Gauge, type Registry } from 'prom-client';
import type { RunningServer } from '../grpc/server.js';

export function registerServerMetrics(
  registry: Registry,
  server: Pick<RunningServer, 'pipelineStreams'>,
): void {
  new Gauge({
    name: 'shameless_pipeline_streams',
    help: 'Pipeline streams open now (each carries many calls)',
    registers: [registry],
    collect() {
      this.set(server.pipelineStreams());
    },
  });
}
