// The standard grpc.health.v1.Health service, with the Watch streams it has open known, so that
// shutdown can end them: grpc-health-check leaves a Watch open until its client goes, and an
// open stream holds a graceful shutdown for the whole grace period.
import type { Server, ServerWritableStream, UntypedServiceImplementation } from '@grpc/grpc-js';
import { HealthImplementation } from 'grpc-health-check';

export type ServingStatus = 'SERVING' | 'NOT_SERVING';

export class HealthService {
  private readonly health: HealthImplementation;
  private readonly watches = new Set<ServerWritableStream<unknown, unknown>>();

  constructor(
    statuses: Record<string, ServingStatus>,
    /** Told of every Check and Watch as it starts. */
    private readonly onCall: () => void = () => undefined,
  ) {
    this.health = new HealthImplementation(statuses);
  }

  /** Watch streams open now. */
  get watching(): number {
    return this.watches.size;
  }

  addTo(server: Server): void {
    // The library adds its own handlers; Watch is wrapped on the way in to track its calls.
    const tracking = {
      addService: (definition: never, implementation: UntypedServiceImplementation) => {
        const watch = implementation.watch as (
          call: ServerWritableStream<unknown, unknown>,
        ) => void;
        const check = implementation.check as (...args: unknown[]) => void;
        server.addService(definition, {
          ...implementation,
          check: (...args: unknown[]) => {
            this.onCall();
            check(...args);
          },
          watch: (call: ServerWritableStream<unknown, unknown>) => {
            this.onCall();
            this.watches.add(call);
            const forget = () => this.watches.delete(call);
            call.once('cancelled', forget);
            call.once('finish', forget);
            watch(call);
          },
        });
      },
    };
    this.health.addToServer(tracking as unknown as Server);
  }

  setStatus(service: string, status: ServingStatus): void {
    this.health.setStatus(service, status);
  }

  /** Ends every open Watch with an OK status, after the statuses it has been sent. */
  endWatches(): void {
    for (const call of this.watches) if (!call.cancelled) call.end();
    this.watches.clear();
  }
}
