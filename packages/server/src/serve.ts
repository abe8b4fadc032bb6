// `shameless serve`: open the store, serve it, and shut down gracefully on SIGTERM/SIGINT.
import { openStore } from './engine/openStore.js';
import { Admission } from './grpc/admission.js';
import { startServer } from './grpc/server.js';
import { createLogger } from './logging.js';
import type { Settings } from './settings.js';

export async function serve(settings: Settings): Promise<void> {
  const logger = createLogger(settings.logLevel);
  const engine = await openStore(
    {
      namespace: settings.namespace,
      shardsCount: settings.shardsCount,
      partitionUrls: settings.partitions,
      createdAt: settings.legacyCreatedAtIsBigint ? 'bigint' : 'datetime',
      poolSize: settings.poolSize,
      connectTimeoutMs: settings.connectTimeoutMs,
      statementTimeoutMs: settings.statementTimeoutMs,
      healthCheckIntervalMs: settings.healthCheckMs,
      startupTimeoutMs: settings.startupTimeoutMs,
      followPollIntervalMs: settings.followPollMs,
      groupLimits: {
        concurrency: settings.writeGroups,
        maxItems: settings.writeGroupMaxItems,
        maxBytes: settings.writeGroupMaxBytes,
        maxQueuedBytes: settings.writeQueueMaxBytes,
      },
      queryLimits: {
        maxConditions: settings.maxWhereConditions,
        maxInValues: settings.maxInValues,
        maxPageRecords: settings.maxPageRecords,
        maxBatchKeys: settings.maxBatchKeys,
        maxPutBatch: settings.maxPutBatch,
      },
    },
    logger,
  );
  const server = await startServer(
    engine,
    {
      listen: settings.listen,
      maxMessageBytes: settings.maxMessageBytes,
      middleware: [
        new Admission({
          maxConcurrentCalls: settings.maxConcurrentCalls,
          maxInFlightBytes: settings.maxInFlightBytes,
          retryPushbackMs: settings.retryPushbackMs,
        }).layer,
      ],
    },
    logger,
  );
  const host = settings.listen.replace(/:\d+$/, '');
  // Tests and scripts wait for this line; keep its shape.
  logger.info('serving', {
    address: `${host}:${server.port}`,
    partitions: settings.partitions.length,
    shardsCount: settings.shardsCount,
    namespace: settings.namespace,
    createdAt: engine.layout.createdAt,
  });
  console.log(`shameless listening on ${host}:${server.port}`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down', { signal, graceMs: settings.graceMs });
    await server.shutdown(settings.graceMs);
    await engine.close();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}
