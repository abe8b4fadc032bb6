// How close the server is to its admission bounds, as Prometheus gauges read when scraped: what
// calls, Each streams and their bytes hold now beside each bound. A RESOURCE_EXHAUSTED counted
// in shameless_rpc_handled_total says a bound was hit; these say which one, and how often
// the server runs near it.
import { Gauge, type Registry } from 'prom-client';
import type { Admission, AdmissionLimits } from '../grpc/middleware/admission.js';

export function registerAdmissionMetrics(
  registry: Registry,
  admission: Pick<Admission, 'inFlight'>,
  limits: AdmissionLimits,
): void {
  new Gauge({
    name: 'shameless_admission_held',
    help: 'What admitted work holds now: calls in progress, long-lived streams open (Each, Consume), bytes reserved',
    labelNames: ['kind'],
    registers: [registry],
    collect() {
      const { calls, streams, bytes } = admission.inFlight;
      this.set({ kind: 'calls' }, calls);
      this.set({ kind: 'streams' }, streams);
      this.set({ kind: 'bytes' }, bytes);
    },
  });
  new Gauge({
    name: 'shameless_admission_limit',
    help: 'The bound of each kind: --max-concurrent-calls, --max-open-streams, --max-in-flight-bytes',
    labelNames: ['kind'],
    registers: [registry],
    collect() {
      this.set({ kind: 'calls' }, limits.maxConcurrentCalls);
      this.set({ kind: 'streams' }, limits.maxOpenStreams);
      this.set({ kind: 'bytes' }, limits.maxInFlightBytes);
    },
  });
}
