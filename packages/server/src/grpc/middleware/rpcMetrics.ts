// RPC metrics as a middleware layer: calls handled by method and status code, their latency,
// calls in flight and open server streams, in a prom-client registry.
import { status } from '@grpc/grpc-js';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { outcomeLayer } from './callOutcome.js';
import type { ServerMiddleware } from '../call/middleware.js';

/** Seconds: from a coalesced point read (~1 ms) to a long stream. */
const LATENCY_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
];

export function rpcMetricsLayer(registry: Registry): ServerMiddleware {
  const registers = [registry];
  const handled = new Counter({
    name: 'shameless_rpc_handled_total',
    help: 'Store calls finished, by method and gRPC status code',
    labelNames: ['method', 'code'],
    registers,
  });
  const latency = new Histogram({
    name: 'shameless_rpc_duration_seconds',
    help: 'Time from a Store call arriving to its last message (streams: their whole life), by method',
    labelNames: ['method'],
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const inFlight = new Gauge({
    name: 'shameless_rpc_in_flight',
    help: 'Store calls being handled now, by method',
    labelNames: ['method'],
    registers,
  });
  const openStreams = new Gauge({
    name: 'shameless_open_streams',
    help: 'Streams (Where, Each, Consume) open now, by method',
    labelNames: ['method'],
    registers,
  });

  return outcomeLayer(
    (code, milliseconds, context) => {
      const labels = { method: context.method };
      inFlight.dec(labels);
      if (context.kind !== 'unary') openStreams.dec(labels);
      handled.inc({ method: context.method, code: status[code] });
      latency.observe(labels, milliseconds / 1000);
    },
    (context) => {
      const labels = { method: context.method };
      inFlight.inc(labels);
      if (context.kind !== 'unary') openStreams.inc(labels);
    },
  );
}
