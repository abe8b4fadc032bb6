// `shameless serve`: open the store, serve it, and shut down gracefully on SIGTERM/SIGINT.
import { Registry, collectDefaultMetrics } from 'prom-client';
import { openStore } from '../engine/openStore.js';
import { accessLogLayer } from '../grpc/middleware/accessLog.js';
import { routeGrpcJsLogs } from '../grpc/grpcJsLogs.js';
import type { ServerMiddleware } from '../grpc/call/middleware.js';
import { rpcMetricsLayer } from '../grpc/middleware/rpcMetrics.js';
import { Admission, type AdmissionLimits } from '../grpc/middleware/admission.js';
import { startServer } from '../grpc/server.js';
import { createLogger } from './logging.js';
import { MemoryRelease } from './memoryRelease.js';
import { registerEngineMetrics } from '../metrics/engineMetrics.js';
import { registerServerMetrics } from '../metrics/serverMetrics.js';
import { registerAdmissionMetrics } from '../metrics/admissionMetrics.js';
import { type MetricsEndpoint, startMetricsEndpoint } from '../metrics/metricsEndpoint.js';
import { serverSecurity } from './serverSecurity.js';
import { type Settings, storeShapeOf } from './settings.js';

/** How often the event loop's lag is sampled for the metrics (prom-client's default: 10 ms). */
const EVENT_LOOP_SAMPLE_MS = 100;

export async function serve(settings: Settings): Promise<void> {
  const logger = createLogger(settings.logLevel);
  routeGrpcJsLogs(logger);
  const security = serverSecurity(settings);
  security.reloadTokensOnHangup(logger);
  const engine = await openStore(
    {
      ...storeShapeOf(settings),
      poolSize: settings.poolSize,
      connectTimeoutMs: settings.connectTimeoutMs,
      statementTimeoutMs: settings.statementTimeoutMs,
      preparedReadsPerConnection: settings.preparedReads,
      healthCheckIntervalMs: settings.healthCheckMs,
      replicas: settings.replicas,
      replicaCheckIntervalMs: settings.replicaCheckMs,
      replicaMaxLagMs: settings.replicaMaxLagMs,
      replicaWaitMs: settings.replicaWaitMs,
      startupTimeoutMs: settings.startupTimeoutMs,
      followPollIntervalMs: settings.followPollMs,
      groupPollIntervalMs: settings.groupPollMs,
      groupLimits: {
        concurrency: settings.writeGroups,
        maxItems: settings.writeGroupMaxItems,
        maxBytes: settings.writeGroupMaxBytes,
        maxQueuedBytes: settings.writeQueueMaxBytes,
      },
      // A GetCells answer never needs more than one message's worth of memory.
      maxAnswerBytes: settings.maxMessageBytes,
      primaryKeyCacheEntries: settings.primaryKeyCacheEntries,
      recordCacheEntries: settings.recordCacheEntries,
      versionCacheBytes: settings.versionCacheBytes,
      queryLimits: {
        maxConditions: settings.maxWhereConditions,
        maxInValues: settings.maxInValues,
        maxPageRecords: settings.maxPageRecords,
        maxBatchKeys: settings.maxBatchKeys,
        maxPutBatch: settings.maxPutBatch,
      },
      bodyLimits: { maxDepth: settings.maxBodyDepth, maxValues: settings.maxBodyValues },
    },
    logger,
  );
  // Outermost first: metrics count, and the access log times, everything inner layers do.
  const middleware: ServerMiddleware[] = [];
  let metrics: MetricsEndpoint | undefined;
  let registry: Registry | undefined;
  if (settings.metricsListen) {
    registry = new Registry();
    collectDefaultMetrics({
      register: registry,
      prefix: 'shameless_',
      // The event loop's lag sampled every 100 ms, not prom-client's 10: its timer alone cost an
      // idle process 0.75% of a core at 10 ms, 0.17% at 100 (issue 55). A stall of 100 ms or more
      // always shows; a shorter one in proportion to its length.
      eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS,
    });
    registerEngineMetrics(registry, engine);
    middleware.push(rpcMetricsLayer(registry));
    metrics = await startMetricsEndpoint(settings.metricsListen, registry);
  }
  // Only at debug: a layer that logs nothing would still cost every call a generator.
  if (['debug', 'trace'].includes(settings.logLevel)) middleware.push(accessLogLayer(logger));
  const admissionLimits: AdmissionLimits = {
    maxConcurrentCalls: settings.maxConcurrentCalls,
    maxOpenStreams: settings.maxOpenStreams,
    maxInFlightBytes: settings.maxInFlightBytes,
    retryPushbackMs: settings.retryPushbackMs,
  };
  const admission = new Admission(admissionLimits);
  const server = await startServer(
    engine,
    {
      listen: settings.listen,
      maxMessageBytes: settings.maxMessageBytes,
      maxPipelineCalls: settings.maxPipelineCalls,
      idleHealthCheckMs: settings.idleHealthCheckMs,
      credentials: security.credentials,
      // Outermost first: metrics and the access log see every call, refused ones included;
      // the token check comes before admission, so unknown callers hold no slot or bytes.
      middleware: [...middleware, ...security.middleware, admission.layer],
    },
    logger,
  );
  if (registry) {
    registerServerMetrics(registry, server);
    registerAdmissionMetrics(registry, admission, admissionLimits);
  }
  security.logProtection(logger);
  const host = settings.listen.replace(/:\d+$/, '');
  // Tests and scripts wait for this line; keep its shape.
  logger.info('serving', {
    address: `${host}:${server.port}`,
    partitions: settings.partitions.length,
    shardsCount: settings.shardsCount,
    namespace: settings.namespace,
    createdAt: engine.layout.createdAt,
  });
  if (metrics) {
    const metricsHost = settings.metricsListen.replace(/:\d+$/, '');
    logger.info('metrics', { url: `http://${metricsHost}:${metrics.port}/metrics` });
  }
  const memoryRelease = new MemoryRelease();
  memoryRelease.start();

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    // Later signals are ignored once a shutdown began: whatever fails, the process ends.
    let code = 0;
    try {
      logger.info('shutting down', { signal, graceMs: settings.graceMs });
      memoryRelease.stop();
      await server.shutdown(settings.graceMs);
      await metrics?.close();
      await engine.close();
      logger.info('stopped');
    } catch (error) {
      code = 1;
      logger.error('shutdown failed', { error: (error as Error).message });
    } finally {
      process.exit(code);
    }
  };
  // Before the line scripts wait for: a SIGTERM right after it must find the handler.
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  console.log(`shameless listening on ${host}:${server.port}`);
}
