// Consumer groups, the engine's face of them: a member joins (its session lives as long as its
// stream), and a group is described, its parked cells listed and replayed, its cursors reset.
// Each group with a member here has one coordinator on this server (groupCoordinator.ts).
import type { CallScope } from '../base/callScope.js';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { type RowId, exactInteger } from '../base/exactInteger.js';
import { FailedPreconditionError, InvalidArgumentError, NotFoundError } from '../base/errors.js';
import type { Logger } from '../base/logger.js';
import { requireLimit, requireShard } from '../base/requestFields.js';
import type { StoreLayout } from '../model/layout.js';
import type { CompiledModel } from '../model/model.js';
import type { PartitionSet } from '../mysql/partitions.js';
import { readLogBacklogs } from '../mysql/sql/contentReads.js';
import type { GroupCellRow, GroupKey, MemberRow } from '../mysql/sql/groupTables.js';
import type { ModelRegistry } from '../schema/modelRegistry.js';
import type { ShardLog } from '../log/shardLog.js';
import { GroupCoordinator, type ShardLag } from './groupCoordinator.js';
import { type Fence, GroupStore, LAG_COUNT_CAP, type ShardDescription } from './groupStore.js';
import { type GroupTally, type MemberSettings, MemberSession } from './memberSession.js';
import type { StoredCell } from '../mysql/sql/contentRows.js';

/** Names of groups and members: stored as values, shown by the CLI. */
const NAME = /^[A-Za-z0-9._-]{1,64}$/;

export const GROUP_DEFAULTS = {
  maxInFlight: 256,
  maxInFlightMax: 10_000,
  perShardInFlight: 1,
  maxDeliveries: 5,
  maxDeliveriesMax: 100,
  sessionTimeoutMs: 10_000,
  sessionTimeoutMinMs: 1000,
  sessionTimeoutMaxMs: 300_000,
  parkedPage: 100,
  parkedPageMax: 1000,
} as const;

/** A member's request to join, as the service reads it (0 and empty: the defaults). */
export interface JoinInput {
  readonly model: string;
  readonly group: string;
  readonly memberId: string;
  readonly from: 'earliest' | 'latest';
  readonly cells: readonly string[];
  readonly maxInFlight: number;
  readonly perShardInFlight: number;
  readonly maxDeliveries: number;
  readonly sessionTimeoutMs: number;
  /** Where the member's stream comes from, for describe. */
  readonly peer: string;
}

export interface GroupDescription {
  readonly members: (MemberRow & { shards: number[] })[];
  readonly shards: ShardDescription[];
}

export interface ParkedPage {
  readonly cells: { row: GroupCellRow; cell: StoredCell | undefined }[];
  /** Where the next page starts; undefined on the last. */
  readonly next: { shard: number; id: RowId } | undefined;
}

/** What this server's consumer groups look like, for its metrics. */
export interface ConsumerGroupStats extends Readonly<GroupTally> {
  readonly model: string;
  readonly group: string;
  /** Members with a stream on this server now. */
  readonly members: number;
  /** Lag of the shards they own, as last read. */
  readonly lags: readonly ShardLag[];
}

export class ConsumerGroups {
  private readonly store: GroupStore;
  private readonly coordinators = new Map<string, GroupCoordinator>();
  /** What each group's members did on this server since it started, by `model/group`. */
  private readonly tallies = new Map<string, GroupTally>();
  /** Every session not yet over, closing ones included: a close of the engine waits for them. */
  private readonly sessions = new Set<MemberSession>();
  /** Which server holds a member's stream, as describe shows it. */
  private readonly server = `${hostname()}:${process.pid}`;
  private closed = false;

  constructor(
    private readonly layout: StoreLayout,
    private readonly partitions: PartitionSet,
    private readonly models: ModelRegistry,
    private readonly log: ShardLog,
    private readonly pollMs: number,
    private readonly logger: Logger,
    /** Runs reads of content tables again where a moved shard now is; as they are when left out. */
    private readonly fenced: Fence = (_scope, work) => work(),
  ) {
    this.store = new GroupStore(layout, partitions, fenced);
  }

  /**
   * A member joins its group (which comes to exist with its first member). Its session lasts
   * until it leaves, its stream closes (`session.close`), it falls silent past its timeout, or
   * another stream of it joins.
   */
  async join(scope: CallScope, input: JoinInput): Promise<MemberSession> {
    const group = requireGroup(input.model, input.group, 'join');
    let model = await this.models.get(input.model, scope);
    // A cell another server added since this one read the model is found by asking again.
    for (const cell of input.cells) model = await this.models.requireCell(model, cell, scope);
    const settings = memberSettings(input);
    const store = this.store.for(scope);
    await store.createGroup(group, model, input.from === 'latest');
    const key = `${group.model}/${group.group}`;
    let coordinator = this.coordinators.get(key);
    if (!coordinator) {
      const created = new GroupCoordinator(
        group,
        this.layout,
        this.store,
        this.pollMs,
        this.logger,
        (turn, shards) => this.lagOf(turn, model, shards),
        () => {
          if (this.coordinators.get(key) === created) this.coordinators.delete(key);
        },
      );
      this.coordinators.set(key, created);
      coordinator = created;
    }
    const owner = coordinator;
    let tally = this.tallies.get(key);
    if (!tally) this.tallies.set(key, (tally = { delivered: 0, failed: 0, parked: 0 }));
    const session = new MemberSession(
      group,
      model,
      settings,
      this.store,
      this.log,
      this.logger,
      () => owner.poke(),
      tally,
    );
    this.sessions.add(session);
    void session.done.then(() => this.sessions.delete(session));
    await store.join(group, {
      memberId: settings.memberId,
      session: session.session,
      server: this.server,
      peer: input.peer,
      timeoutMs: settings.sessionTimeoutMs,
    });
    // A close of the engine while the join was on its way: the member is not left behind.
    if (this.closed) {
      await session.close({ countLost: false, reason: 'shutdown' });
      return session;
    }
    coordinator.add(session);
    return session;
  }

  async describe(
    scope: CallScope,
    modelName: string,
    groupName: string,
  ): Promise<GroupDescription> {
    const group = requireGroup(modelName, groupName);
    const model = await this.models.get(modelName, scope);
    const store = this.store.for(scope);
    await requireExists(store, group);
    const { members, shards } = await store.describe(group, model);
    return {
      members: members.map((member) => ({
        ...member,
        shards: shards
          .filter((shard) => shard.owner === member.memberId)
          .map((shard) => shard.shard),
      })),
      shards,
    };
  }

  async parked(
    scope: CallScope,
    modelName: string,
    groupName: string,
    shard: number | undefined,
    limit: number,
    after: { shard: number; id: RowId } | undefined,
  ): Promise<ParkedPage> {
    const group = requireGroup(modelName, groupName);
    const model = await this.models.get(modelName, scope);
    if (shard !== undefined) requireShard(shard, this.layout.shardsCount, 'shard');
    const pageSize = requireLimit(
      limit,
      'limit',
      GROUP_DEFAULTS.parkedPage,
      GROUP_DEFAULTS.parkedPageMax,
    );
    const store = this.store.for(scope);
    await requireExists(store, group);
    const cells = await store.parked(
      group,
      model,
      after ?? { shard: -1, id: 0 },
      shard,
      pageSize + 1,
    );
    const page = cells.slice(0, pageSize);
    const last = page[page.length - 1]?.row;
    return {
      cells: page,
      next: cells.length > pageSize && last ? { shard: last.shard, id: last.id } : undefined,
    };
  }

  async replay(
    scope: CallScope,
    modelName: string,
    groupName: string,
    shard: number,
    id: RowId,
  ): Promise<void> {
    const group = requireGroup(modelName, groupName);
    await this.models.get(modelName, scope);
    requireShard(shard, this.layout.shardsCount, 'shard');
    const store = this.store.for(scope);
    await requireExists(store, group);
    if (!(await store.askReplay(group, shard, id))) {
      throw new NotFoundError(`cell ${id} of shard ${shard} is not parked in group ${groupName}`);
    }
  }

  /** Moves the group's cursors; only while none of its members is connected. */
  async reset(
    scope: CallScope,
    modelName: string,
    groupName: string,
    to: { position: 'earliest' | 'latest' } | { shard: number; cursor: RowId },
  ): Promise<ShardDescription[]> {
    const group = requireGroup(modelName, groupName);
    const model = await this.models.get(modelName, scope);
    if ('shard' in to) requireShard(to.shard, this.layout.shardsCount, 'shard.shard');
    const store = this.store.for(scope);
    await requireExists(store, group);
    const live = await store.liveMembers(group);
    if (live.length > 0) {
      throw new FailedPreconditionError(
        `group ${groupName} has members connected (${live.join(', ')}): stop them, or wait for their sessions to end, then reset`,
      );
    }
    const shards = Array.from({ length: this.layout.shardsCount }, (_, shard) => shard);
    let cursors: { shard: number; cursor: RowId }[];
    if ('shard' in to) {
      const cursor = exactInteger(to.cursor);
      const maxId = (await store.maxIds(model, [to.shard])).get(to.shard)!;
      // Past the shard's end, the cells written until an id passes it would never be delivered.
      if (cursor > maxId) {
        throw new InvalidArgumentError(
          'shard.cursor',
          `shard ${to.shard}'s highest id is ${maxId}: a cursor past it would skip the cells written until an id passes ${cursor}; ${maxId} puts the group at the shard's end`,
        );
      }
      cursors = [{ shard: to.shard, cursor }];
    } else if (to.position === 'earliest') cursors = shards.map((shard) => ({ shard, cursor: 0 }));
    else {
      const maxIds = await store.maxIds(model, shards);
      cursors = shards.map((shard) => ({ shard, cursor: maxIds.get(shard)! }));
    }
    await store.setCursors(group, cursors);
    return (await store.describe(group, model)).shards;
  }

  /** Every group that had a member on this server since it started. */
  stats(): ConsumerGroupStats[] {
    return [...this.tallies].map(([key, tally]) => {
      const coordinator = this.coordinators.get(key);
      const [model, group] = [key.slice(0, key.indexOf('/')), key.slice(key.indexOf('/') + 1)];
      return {
        model,
        group,
        ...tally,
        members: coordinator?.members ?? 0,
        lags: coordinator?.shardLags() ?? [],
      };
    });
  }

  /** Ends every member's session on this server: their shards go to members elsewhere. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.coordinators.values()].map((coordinator) => coordinator.close()));
    // Sessions whose close had begun (a stream that ended) finish writing their rows first.
    await Promise.all(
      [...this.sessions].map((session) => session.close({ countLost: false, reason: 'shutdown' })),
    );
  }

  private async lagOf(
    scope: CallScope,
    model: CompiledModel,
    shards: readonly { shard: number; cursor: RowId }[],
  ): Promise<ShardLag[]> {
    return this.fenced(scope, async () => {
      const lags: ShardLag[] = [];
      await Promise.all(
        [...this.layout.byPartition(shards, ({ shard }) => shard)].map(async ([index, list]) => {
          const backlogs = await this.partitions.at(index).read(scope, (reader) =>
            readLogBacklogs(
              reader,
              list.map(({ shard, cursor }) => ({
                table: this.layout.contentTable(model, shard),
                cursor,
              })),
              LAG_COUNT_CAP,
            ),
          );
          list.forEach(({ shard }, i) => lags.push({ shard, lag: backlogs[i]!.count }));
        }),
      );
      return lags.sort((a, b) => a.shard - b.shard);
    });
  }
}

function requireGroup(model: string, group: string, prefix?: string): GroupKey {
  const field = (name: string) => (prefix ? `${prefix}.${name}` : name);
  if (model === '') throw new InvalidArgumentError(field('model'), 'is required');
  if (!NAME.test(group)) {
    throw new InvalidArgumentError(
      field('group'),
      group === '' ? 'is required' : 'must be 1 to 64 characters of A-Z a-z 0-9 . _ -',
    );
  }
  return { model, group };
}

function memberSettings(input: JoinInput): MemberSettings {
  if (input.memberId !== '' && !NAME.test(input.memberId)) {
    throw new InvalidArgumentError(
      'join.member_id',
      'must be 1 to 64 characters of A-Z a-z 0-9 . _ -',
    );
  }
  const maxInFlight = requireLimit(
    input.maxInFlight,
    'join.max_in_flight',
    GROUP_DEFAULTS.maxInFlight,
    GROUP_DEFAULTS.maxInFlightMax,
  );
  const perShardInFlight = requireLimit(
    input.perShardInFlight,
    'join.per_shard_in_flight',
    GROUP_DEFAULTS.perShardInFlight,
    maxInFlight,
  );
  const maxDeliveries = requireLimit(
    input.maxDeliveries,
    'join.max_deliveries',
    GROUP_DEFAULTS.maxDeliveries,
    GROUP_DEFAULTS.maxDeliveriesMax,
  );
  const sessionTimeoutMs = requireLimit(
    input.sessionTimeoutMs,
    'join.session_timeout_ms',
    GROUP_DEFAULTS.sessionTimeoutMs,
    GROUP_DEFAULTS.sessionTimeoutMaxMs,
  );
  if (sessionTimeoutMs < GROUP_DEFAULTS.sessionTimeoutMinMs) {
    throw new InvalidArgumentError(
      'join.session_timeout_ms',
      `must be at least ${GROUP_DEFAULTS.sessionTimeoutMinMs} ms, got ${sessionTimeoutMs}`,
    );
  }
  return {
    memberId: input.memberId || `member-${randomBytes(6).toString('hex')}`,
    cells: input.cells.length > 0 ? new Set(input.cells) : undefined,
    maxInFlight,
    perShardInFlight,
    maxDeliveries,
    sessionTimeoutMs,
    // Both sides speak up four times per session timeout, at most every 3 s.
    heartbeatIntervalMs: Math.min(3000, Math.max(250, Math.floor(sessionTimeoutMs / 4))),
    peer: input.peer,
  };
}

async function requireExists(store: GroupStore, group: GroupKey): Promise<void> {
  if (!(await store.exists(group))) {
    throw new NotFoundError(
      `consumer group ${group.group} of model ${group.model} does not exist: it comes to exist when its first member joins`,
    );
  }
}
