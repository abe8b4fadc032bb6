// The engine's numbers as Prometheus metrics, read from its EngineStats when scraped: each
// partition's connection pool and group commit (transactions, writes, group sizes), the caches,
// and the consumer groups with members on this server (their lag per shard, and counts).
import { Counter, Gauge, type Registry } from 'prom-client';
import { type EngineStats, GROUP_SIZE_BOUNDS } from '../engine/index.js';

export function registerEngineMetrics(registry: Registry, stats: EngineStats): void {
  const registers = [registry];
  const gauge = (name: string, help: string, labelNames: string[], read: (gauge: Gauge) => void) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers,
      collect() {
        this.reset();
        read(this);
      },
    });
  const counter = (
    name: string,
    help: string,
    read: (counter: Counter) => void,
    labelNames = ['partition'],
  ) =>
    new Counter({
      name,
      help,
      labelNames,
      registers,
      collect() {
        this.reset();
        read(this);
      },
    });
  const each = (
    read: (
      partition: string,
      activity: ReturnType<EngineStats['partitionActivity']>[number],
    ) => void,
  ) => {
    for (const activity of stats.partitionActivity()) read(String(activity.partition), activity);
  };

  gauge(
    'shameless_pool_connections',
    'MySQL connections open, by partition and state (in_use, idle)',
    ['partition', 'state'],
    (metric) =>
      each((partition, { pool }) => {
        metric.set({ partition, state: 'in_use' }, pool.inUse);
        metric.set({ partition, state: 'idle' }, pool.open - pool.inUse);
      }),
  );
  gauge(
    'shameless_pool_connection_limit',
    'Most MySQL connections a partition opens (--pool-size)',
    ['partition'],
    (metric) => each((partition, { pool }) => metric.set({ partition }, pool.limit)),
  );
  gauge(
    'shameless_pool_waiting',
    'Requests waiting for a MySQL connection, by partition',
    ['partition'],
    (metric) => each((partition, { pool }) => metric.set({ partition }, pool.waiting)),
  );
  counter(
    'shameless_prepared_reads_total',
    'Point reads that may run prepared (--prepared-reads), by partition and how they ran: handle (a prepared statement) or text (seen once on its connection, refused, or too long)',
    (metric) =>
      each((partition, { pool }) => {
        if (!pool.preparedReads) return;
        metric.inc({ partition, how: 'handle' }, pool.preparedReads.byHandle);
        metric.inc({ partition, how: 'text' }, pool.preparedReads.asText);
      }),
    ['partition', 'how'],
  );
  counter(
    'shameless_prepared_statements_total',
    'Statements prepared for point reads, by partition and outcome: prepared, or refused by MySQL (its max_prepared_stmt_count reached, say: those reads go as text)',
    (metric) =>
      each((partition, { pool }) => {
        if (!pool.preparedReads) return;
        metric.inc({ partition, outcome: 'prepared' }, pool.preparedReads.prepared);
        metric.inc({ partition, outcome: 'refused' }, pool.preparedReads.refused);
      }),
    ['partition', 'outcome'],
  );
  gauge(
    'shameless_write_groups_running',
    'Write transactions running now, by partition',
    ['partition'],
    (metric) => each((partition, { writes }) => metric.set({ partition }, writes.running)),
  );
  gauge(
    'shameless_writes_waiting',
    'Writes queued for the next write transaction, by partition',
    ['partition'],
    (metric) => each((partition, { writes }) => metric.set({ partition }, writes.waiting)),
  );
  counter(
    'shameless_write_groups_total',
    'Write transactions (group commits) run, by partition',
    (metric) => each((partition, { writes }) => metric.inc({ partition }, writes.groups)),
  );
  counter(
    'shameless_writes_total',
    'Writes committed through write transactions, by partition',
    (metric) => each((partition, { writes }) => metric.inc({ partition }, writes.items)),
  );
  registry.registerMetric(groupSizeHistogram(stats));
  gauge(
    'shameless_primary_key_cache_entries',
    'Tuples of primary values whose record the server remembers (at most --primary-key-cache-entries)',
    [],
    (metric) => metric.set(stats.primaryKeyCacheStats().entries),
  );
  gauge(
    'shameless_record_cache_entries',
    'Records the server remembers to exist (at most --record-cache-entries)',
    [],
    (metric) => metric.set(stats.recordCacheStats().entries),
  );
  gauge(
    'shameless_version_cache_entries',
    'Cells whose latest version the server remembers (in at most --version-cache-bytes)',
    [],
    (metric) => metric.set(stats.versionCacheStats().entries),
  );
  gauge(
    'shameless_version_cache_bytes',
    'Bytes the remembered cells count (bodies and keys), by part: the cells of records just created (at most a quarter of --version-cache-bytes), and those written to',
    ['part'],
    (metric) => {
      const { bytes, createdBytes } = stats.versionCacheStats();
      metric.set({ part: 'created' }, createdBytes);
      metric.set({ part: 'written' }, bytes - createdBytes);
    },
  );
  new Counter({
    name: 'shameless_version_cache_lookups_total',
    help: 'Writes that asked the version cache for their cell, by result (hit, miss, stale: remembered but no longer the latest)',
    labelNames: ['result'],
    registers,
    collect() {
      this.reset();
      const { hits, misses, stale } = stats.versionCacheStats();
      this.inc({ result: 'hit' }, hits);
      this.inc({ result: 'miss' }, misses);
      this.inc({ result: 'stale' }, stale);
    },
  });
  const replicas = () =>
    stats.replicaStats().map((replica) => ({
      ...replica,
      labels: { partition: String(replica.partition), replica: String(replica.replica) },
    }));
  gauge(
    'shameless_replica_lag_seconds',
    'How stale each read replica may be (an upper bound, exact to one --replica-check-ms), by partition and replica; +Inf when not known',
    ['partition', 'replica'],
    (metric) => {
      for (const { labels, lagMs } of replicas()) metric.set(labels, lagMs / 1000);
    },
  );
  gauge(
    'shameless_replica_serving',
    '1 while a read replica serves reads (answering, no staler than --replica-max-lag-ms), else 0; by partition, replica and state (serving, lagging, down)',
    ['partition', 'replica', 'state'],
    (metric) => {
      for (const { labels, state } of replicas()) {
        metric.set({ ...labels, state }, state === 'serving' ? 1 : 0);
      }
    },
  );
  new Counter({
    name: 'shameless_replica_reads_total',
    help: 'Reads (round trips) each read replica answered, by partition and replica',
    labelNames: ['partition', 'replica'],
    registers,
    collect() {
      this.reset();
      for (const { labels, reads } of replicas()) this.inc(labels, reads);
    },
  });
  gauge(
    'shameless_galera_node',
    "1 for each node of a partition on Galera with its health (current: written and read through; standby: Synced, where the partition goes next; down), by partition and node (its place in the partition's list)",
    ['partition', 'node', 'health'],
    (metric) => {
      for (const { partition, node, health } of stats.galeraNodeStats()) {
        metric.set({ partition: String(partition), node: String(node), health }, 1);
      }
    },
  );
  gauge(
    'shameless_partition_map_version',
    'The version of the partition map this server routes by: 0 for a store that never moved a shard; each move publishes the next, and every server follows within a health-check period',
    [],
    (metric) => metric.set(stats.partitionMapVersion()),
  );
  const groups = () => stats.consumerGroupStats();
  new Gauge({
    name: 'shameless_consumer_group_lag',
    help: "Cells past a consumer group's written cursor, by model, group and shard, for the shards owned by members connected to this server (read every 5 s; counted up to 1,000,000)",
    labelNames: ['model', 'group', 'shard'],
    registers,
    collect() {
      this.reset();
      for (const { model, group, lags } of groups()) {
        for (const { shard, lag } of lags) this.set({ model, group, shard: String(shard) }, lag);
      }
    },
  });
  new Gauge({
    name: 'shameless_consumer_group_members',
    help: 'Members of a consumer group connected to this server now, by model and group',
    labelNames: ['model', 'group'],
    registers,
    collect() {
      this.reset();
      for (const { model, group, members } of groups()) this.set({ model, group }, members);
    },
  });
  new Counter({
    name: 'shameless_consumer_group_deliveries_total',
    help: "Cells this server delivered to a consumer group's members, and deliveries that failed and cells parked, by model, group and outcome (delivered, failed, parked)",
    labelNames: ['model', 'group', 'outcome'],
    registers,
    collect() {
      this.reset();
      for (const { model, group, delivered, failed, parked } of groups()) {
        this.inc({ model, group, outcome: 'delivered' }, delivered);
        this.inc({ model, group, outcome: 'failed' }, failed);
        this.inc({ model, group, outcome: 'parked' }, parked);
      }
    },
  });
  new Counter({
    name: 'shameless_primary_key_cache_lookups_total',
    help: 'Puts and point Wheres that asked the primary-key cache for their record, by result (hit, miss)',
    labelNames: ['result'],
    registers,
    collect() {
      this.reset();
      const { hits, misses } = stats.primaryKeyCacheStats();
      this.inc({ result: 'hit' }, hits);
      this.inc({ result: 'miss' }, misses);
    },
  });
}

/**
 * Writes per write transaction, by partition: a histogram whose buckets the engine counts, so a
 * custom metric that prom-client prints like its own histograms.
 */
function groupSizeHistogram(stats: EngineStats): Parameters<Registry['registerMetric']>[0] {
  const name = 'shameless_write_group_size';
  const help = 'Writes per write transaction (group commit), by partition';
  const metric = {
    name,
    help,
    type: 'histogram',
    aggregator: 'sum',
    get: async () => ({
      name,
      help,
      type: 'histogram',
      aggregator: 'sum',
      values: stats.partitionActivity().flatMap(({ partition, writes }) => {
        let cumulative = 0;
        const buckets = [...GROUP_SIZE_BOUNDS, '+Inf'].map((bound, i) => {
          cumulative += writes.groupSizes[i] ?? 0;
          return {
            metricName: `${name}_bucket`,
            labels: { partition: String(partition), le: bound },
            value: cumulative,
          };
        });
        return [
          ...buckets,
          {
            metricName: `${name}_sum`,
            labels: { partition: String(partition) },
            value: writes.items,
          },
          {
            metricName: `${name}_count`,
            labels: { partition: String(partition) },
            value: writes.groups,
          },
        ];
      }),
    }),
    reset: () => {},
  };
  return metric as unknown as Parameters<Registry['registerMetric']>[0];
}
