// The gRPC server: the Store service, the standard health and reflection services, and a graceful
// shutdown.
import { Server, ServerCredentials } from '@grpc/grpc-js';
import { StoreService } from '@shameless/proto';
import type { Engine } from '../engine/engine.js';
import type { Logger } from '../engine/base/logger.js';
import { createHandlerFactory, OpenStreams } from './service/handlers.js';
import { HealthService } from './healthService.js';
import { listenError } from './listenError.js';
import { composeMiddleware, type ServerMiddleware } from './call/middleware.js';
import { sessionConsistencyLayer } from './middleware/sessionConsistency.js';
import { pipelineHandler, withEncodedPipelineAnswers } from './service/pipeline.js';
import { addReflection } from './reflection.js';
import { withTolerantDecoding } from './call/requestDecoding.js';
import { createStoreService } from './service/storeService.js';
import { unaryCalls } from './service/unaryCalls.js';

export const STORE_SERVICE_NAME = 'shameless.v1.Store';

/** Calls of one Pipeline stream run at once, by default (--max-pipeline-calls). */
export const DEFAULT_PIPELINE_CALLS = 128;

/** The largest message, by default (--max-message-bytes): the largest cell and some room. */
export const DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024 + 64 * 1024;

export interface ServerOptions {
  /** host:port; port 0 picks a free one. */
  listen: string;
  maxMessageBytes: number;
  /** TLS or mutual TLS (see serverCredentials.ts); insecure when unset. */
  credentials?: ServerCredentials;
  /** Calls of one Pipeline stream run at once; default DEFAULT_PIPELINE_CALLS. */
  maxPipelineCalls?: number;
  /**
   * Layers every Store call passes through, outermost first, each call of a Pipeline as a call
   * of its own. Health is outside the chain.
   */
  middleware?: readonly ServerMiddleware[];
  /**
   * With no call for this long and no stream open, the partition health probe runs at this period
   * instead of the engine's (--idle-health-check-ms); the first call after probes at once. Left
   * out or 0: the probe never rests.
   */
  idleHealthCheckMs?: number;
}

export interface RunningServer {
  /** The port actually bound. */
  port: number;
  /**
   * Stops taking calls: health goes NOT_SERVING, open streams end cleanly, in-flight calls get
   * up to graceMs to finish before they are cancelled. Does not close the engine.
   */
  shutdown(graceMs: number): Promise<void>;
  /** Pipeline streams open now. */
  pipelineStreams(): number;
}

export async function startServer(
  engine: Engine,
  options: ServerOptions,
  logger: Logger,
): Promise<RunningServer> {
  const server = new Server({
    'grpc.max_receive_message_length': options.maxMessageBytes,
    'grpc.max_send_message_length': options.maxMessageBytes,
    'grpc.keepalive_time_ms': 60_000,
    'grpc.keepalive_permit_without_calls': 1,
  });
  const streams = new OpenStreams();
  const onCall = () => engine.health.noteCall();
  const handlers = createHandlerFactory(
    logger,
    streams,
    // Innermost: the engine runs the call under the consistency it asks for.
    composeMiddleware([...(options.middleware ?? []), sessionConsistencyLayer(engine.hasReplicas)]),
    onCall,
  );
  const calls = unaryCalls(engine);
  const pipeline = pipelineHandler({
    handlers,
    calls,
    streams,
    logger,
    maxMessageBytes: options.maxMessageBytes,
    maxCalls: options.maxPipelineCalls ?? DEFAULT_PIPELINE_CALLS,
  });
  server.addService(
    withEncodedPipelineAnswers(withTolerantDecoding(StoreService)),
    createStoreService(engine, handlers, calls, pipeline.handle, options.maxMessageBytes),
  );
  const partitionService = (index: number) => `${STORE_SERVICE_NAME}/partition/${index}`;
  // Partitions by id; a partition a newer partition map adds gets its status when it joins.
  let partitionCount = 0;
  const health = new HealthService({ '': 'SERVING', [STORE_SERVICE_NAME]: 'SERVING' }, onCall);
  if (options.idleHealthCheckMs) {
    engine.health.restWhileIdle({
      intervalMs: options.idleHealthCheckMs,
      busy: () => streams.size > 0 || health.watching > 0,
    });
  }
  const addPartitions = () => {
    for (; partitionCount < engine.layout.partitionCount; partitionCount++) {
      health.setStatus(
        partitionService(partitionCount),
        engine.health.isUp(partitionCount) ? 'SERVING' : 'NOT_SERVING',
      );
    }
  };
  addPartitions();
  let stopped = false;
  engine.onPartitionMapChange(() => {
    if (!stopped) addPartitions();
  });
  engine.health.onChange((index, up) => {
    if (!stopped) health.setStatus(partitionService(index), up ? 'SERVING' : 'NOT_SERVING');
  });
  health.addTo(server);
  addReflection(server, logger);

  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      options.listen,
      options.credentials ?? ServerCredentials.createInsecure(),
      (error, boundPort) =>
        error ? reject(listenError(options.listen, error)) : resolve(boundPort),
    ),
  );

  let stopping: Promise<void> | undefined;
  const shutdown = (graceMs: number) =>
    (stopping ??= (async () => {
      health.setStatus('', 'NOT_SERVING');
      health.setStatus(STORE_SERVICE_NAME, 'NOT_SERVING');
      stopped = true;
      for (let index = 0; index < partitionCount; index++) {
        health.setStatus(partitionService(index), 'NOT_SERVING');
      }
      health.endWatches();
      streams.abortAll();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          logger.warn('grace period over; cancelling calls still in flight', { graceMs });
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    })());
  return { port, shutdown, pipelineStreams: pipeline.open };
}
