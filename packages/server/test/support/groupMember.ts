// A consumer group member spoken over the raw contract, for tests of the Consume protocol: it
// records everything the server sends and answers only what the test tells it to (or, with
// `autoAck`, acknowledges every delivery at once).
import type { ClientDuplexStream, ServiceError } from '@grpc/grpc-js';
import {
  type ConsumeRequest,
  type ConsumeResponse,
  type Delivery,
  type JoinGroup,
  StartFrom,
} from '@shameless/proto';
import type { StoreApi } from './grpcCalls.js';

export const JOIN_DEFAULTS: JoinGroup = {
  model: 'rate',
  group: 'g',
  memberId: '',
  from: StartFrom.START_FROM_EARLIEST,
  cells: [],
  maxInFlight: 0,
  perShardInFlight: 0,
  maxDeliveries: 0,
  sessionTimeoutMs: 0,
};

type Message = NonNullable<ConsumeResponse['message']>;
type MessageOf<K extends Message['$case']> =
  Extract<Message, { $case: K }> extends Record<K, infer Body> ? Body : never;

export class GroupMember {
  readonly stream: ClientDuplexStream<ConsumeRequest, ConsumeResponse>;
  /** Every message received, in order. */
  readonly received: Message[] = [];
  /** Every delivery received, in order. */
  readonly deliveries: Delivery[] = [];
  /** The shards owned now, with the epoch each is owned under. */
  readonly owned = new Map<number, bigint>();
  /** `shard/id` of every cell this member acknowledged: the cells it handled. */
  readonly handled = new Set<string>();
  /** The durable cursor per shard, as the server confirmed it. */
  readonly committed = new Map<number, bigint>();
  memberId = '';
  ended: { error?: ServiceError } | undefined;
  private readonly waiters = new Set<() => void>();
  private autoAck = false;
  private autoRelease = true;

  constructor(api: StoreApi) {
    this.stream = api.consume();
    this.stream.on('data', (response: ConsumeResponse) => this.receive(response));
    this.stream.on('error', (error: ServiceError) => {
      this.ended ??= { error };
      this.notify();
    });
    this.stream.on('end', () => {
      this.ended ??= {};
      this.notify();
    });
  }

  /** Joins (unset fields take their defaults); resolves once the server answered GroupJoined. */
  static async join(
    api: StoreApi,
    join: Partial<JoinGroup>,
    behaviour: { autoAck?: boolean; autoRelease?: boolean } = {},
  ): Promise<GroupMember> {
    const member = new GroupMember(api);
    member.autoAck = behaviour.autoAck ?? false;
    member.autoRelease = behaviour.autoRelease ?? true;
    member.send({ $case: 'join', join: { ...JOIN_DEFAULTS, ...join } });
    const joined = await member.next('joined');
    member.memberId = joined.memberId;
    return member;
  }

  send(message: NonNullable<ConsumeRequest['message']>): void {
    this.stream.write({ message });
  }

  ack(deliveries: readonly Delivery[]): void {
    for (const { cell } of deliveries) this.handled.add(`${cell!.shard}/${cell!.id}`);
    const byShard = new Map<number, { epoch: bigint; ids: bigint[] }>();
    for (const { cell, epoch } of deliveries) {
      const key = cell!.shard;
      const entry = byShard.get(key) ?? { epoch, ids: [] };
      entry.ids.push(cell!.id);
      byShard.set(key, entry);
    }
    this.send({
      $case: 'ack',
      ack: { shards: [...byShard].map(([shard, { epoch, ids }]) => ({ shard, epoch, ids })) },
    });
  }

  fail(delivery: Delivery, error: string): void {
    this.send({
      $case: 'failed',
      failed: { shard: delivery.cell!.shard, epoch: delivery.epoch, id: delivery.cell!.id, error },
    });
  }

  park(delivery: Delivery, reason: string): void {
    this.send({
      $case: 'park',
      park: { shard: delivery.cell!.shard, epoch: delivery.epoch, id: delivery.cell!.id, reason },
    });
  }

  heartbeat(): void {
    this.send({ $case: 'heartbeat', heartbeat: {} });
  }

  /**
   * Leaves gracefully, handling nothing more (cells that arrive meanwhile are dropped, as the
   * SDK drops what it has not started); resolves once the server answered GroupLeft and ended
   * the stream.
   */
  async leave(): Promise<void> {
    this.autoAck = false;
    this.send({ $case: 'leave', leave: {} });
    await this.next('left');
    await this.until(() => this.ended !== undefined);
  }

  /** Goes away without a word, as a process that died. */
  cancel(): void {
    this.stream.cancel();
  }

  /** The messages of one kind received so far. */
  all<K extends Message['$case']>(kind: K): MessageOf<K>[] {
    return this.received
      .filter((message) => message.$case === kind)
      .map((message) => (message as Record<K, unknown>)[kind] as MessageOf<K>);
  }

  /** The first message of `kind` not yet taken by an earlier call of next. */
  async next<K extends Message['$case']>(kind: K, timeoutMs = 15_000): Promise<MessageOf<K>> {
    const taken = (this.taken[kind] ??= 0);
    await this.until(() => this.all(kind).length > taken, timeoutMs, `a ${kind} message`);
    this.taken[kind] = taken + 1;
    return this.all(kind)[taken]!;
  }

  private readonly taken: Partial<Record<Message['$case'], number>> = {};

  /** Resolves once `condition` holds (checked on every message), or fails after `timeoutMs`. */
  until(condition: () => boolean, timeoutMs = 15_000, what = 'the condition'): Promise<void> {
    if (condition()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      const check = () => {
        if (!condition()) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve();
      };
      this.waiters.add(check);
    });
  }

  private receive(response: ConsumeResponse): void {
    const message = response.message;
    if (!message) return;
    this.received.push(message);
    switch (message.$case) {
      case 'assigned':
        this.owned.set(message.assigned.shard, message.assigned.epoch);
        break;
      case 'revoked':
        if (this.autoRelease) {
          this.owned.delete(message.revoked.shard);
          this.send({ $case: 'released', released: message.revoked });
        }
        break;
      case 'lost':
        this.owned.delete(message.lost.shard);
        break;
      case 'committed':
        this.committed.set(message.committed.shard, message.committed.cursor);
        break;
      case 'deliveries':
        this.deliveries.push(...message.deliveries.deliveries);
        if (this.autoAck) this.ack(message.deliveries.deliveries);
        break;
    }
    this.notify();
  }

  private notify(): void {
    for (const check of [...this.waiters]) check();
  }
}

/** Milliseconds until `condition` holds, polling every 20 ms; fails past `timeoutMs`. */
export async function timeUntil(
  condition: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await condition()) return Date.now() - started;
    if (Date.now() - started > timeoutMs) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
