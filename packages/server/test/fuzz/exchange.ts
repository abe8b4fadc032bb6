// Sends one fuzz case over the raw client, as bytes, and records what came back: every message
// and the final status of every call, whether the fuzzer itself cancelled it, and the request
// ids it carried. Nothing here judges; invariants.ts does.
import {
  type Client,
  type ClientDuplexStream,
  Metadata,
  type StatusObject,
  status,
} from '@grpc/grpc-js';
import { type Rpc, type FuzzCase, type MessageDraft } from './requests.js';
import { contractOf, encodeDraft, tryDecode } from './contract.js';
import { AGAIN_REQUEST_ID, FRESH_REQUEST_ID, RECORD_SLOT } from './world.js';

/** The longest any call may take; a call still going then is a hang. */
const CALL_DEADLINE_MS = 30_000;

/** One call as it went: the bytes sent, the bytes answered, how it ended. */
export interface CallRecord {
  readonly rpc: Rpc;
  readonly sent: Buffer[];
  readonly received: Buffer[];
  status: StatusObject;
  /** The fuzzer cancelled it (a follower read long enough, a member that goes away). */
  cancelledByUs: boolean;
}

/** Turns a draft's markers into values: record slots into uuids, request id markers into ids. */
export class Markers {
  /** Every request id the fuzzer made, oldest first. */
  private readonly issued: string[] = [];
  private next = 0;

  constructor(
    private readonly records: readonly string[],
    /** Makes this run's ids its own, whatever the store held before. */
    private readonly tag: string,
  ) {}

  /** The first id the next fresh one will be (ids sort in the order they are made). */
  peekFresh(): string {
    return this.idOf(this.next);
  }

  replace = (text: string): string => {
    if (text.startsWith(RECORD_SLOT)) {
      return this.records[Number(text.slice(RECORD_SLOT.length)) % this.records.length]!;
    }
    if (text === FRESH_REQUEST_ID) return this.fresh();
    if (text.startsWith(AGAIN_REQUEST_ID)) {
      const back = Number(text.slice(AGAIN_REQUEST_ID.length));
      return this.issued[this.issued.length - 1 - back] ?? this.fresh();
    }
    return text;
  };

  private fresh(): string {
    const id = this.idOf(this.next++);
    this.issued.push(id);
    if (this.issued.length > 100) this.issued.shift();
    return id;
  }

  /** Fixed width, so that the ids of one case are a range in byte order. */
  private idOf(n: number): string {
    return `fz-${this.tag}-${String(n).padStart(10, '0')}`;
  }
}

const passThrough = (bytes: Buffer) => bytes;

function deadline(): { deadline: number } {
  return { deadline: Date.now() + CALL_DEADLINE_MS };
}

/**
 * Metadata of a stream from fuzzed keys and values, those HTTP/2 cannot carry left out: grpc-js
 * takes a key such as `a:b` and then fails the whole connection on it, in the client, before
 * the server hears of it (a Pipeline call's own metadata is a map in the message: any goes).
 */
function streamMetadata(entries: Readonly<Record<string, string>>): Metadata {
  const metadata = new Metadata();
  for (const [key, value] of Object.entries(entries)) {
    if (!/^[0-9a-z_.-]+$/.test(key) || key.endsWith('-bin')) continue;
    if (!/^[\x20-\x7e]*$/.test(value)) continue;
    metadata.set(key, value);
  }
  return metadata;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Sends the case; one record per call made. */
export async function exchange(
  client: Client,
  fuzz: FuzzCase,
  markers: Markers,
): Promise<CallRecord[]> {
  const { path, request } = contractOf(fuzz.rpc);
  const encode = (draft: MessageDraft) => encodeDraft(request, draft, markers.replace);
  switch (fuzz.kind) {
    case 'unary': {
      const bytes = encode(fuzz.request);
      return Promise.all(
        Array.from({ length: fuzz.copies }, () => unary(client, fuzz.rpc, path, bytes)),
      );
    }
    case 'where':
      return [await serverStream(client, fuzz.rpc, path, encode(fuzz.request), undefined)];
    case 'each': {
      const bytes = encode(fuzz.request);
      const decoded = tryDecode(request, bytes) as { follow?: boolean } | undefined;
      const cutAfter = decoded?.follow === false ? undefined : fuzz.followMs;
      return [await serverStream(client, fuzz.rpc, path, bytes, cutAfter)];
    }
    case 'consume':
      return [await consume(client, path, fuzz.messages.map(encode), fuzz.lingerMs)];
    case 'pipeline':
      return [
        await pipeline(client, path, fuzz.messages.map(encode), streamMetadata(fuzz.metadata)),
      ];
  }
}

function record(rpc: Rpc, sent: Buffer[]): CallRecord {
  return {
    rpc,
    sent,
    received: [],
    status: { code: status.UNKNOWN, details: 'no status yet', metadata: new Metadata() },
    cancelledByUs: false,
  };
}

function unary(client: Client, rpc: Rpc, path: string, bytes: Buffer): Promise<CallRecord> {
  const call = record(rpc, [bytes]);
  return new Promise((resolve) => {
    const pending = client.makeUnaryRequest(
      path,
      passThrough,
      passThrough,
      bytes,
      new Metadata(),
      deadline(),
      (_error, response) => {
        if (response) call.received.push(response);
      },
    );
    pending.on('status', (ended: StatusObject) => {
      call.status = ended;
      // The callback runs before 'status' for a response; give it its turn either way.
      setImmediate(() => resolve(call));
    });
  });
}

function serverStream(
  client: Client,
  rpc: Rpc,
  path: string,
  bytes: Buffer,
  cutAfterMs: number | undefined,
): Promise<CallRecord> {
  const call = record(rpc, [bytes]);
  return new Promise((resolve) => {
    const stream = client.makeServerStreamRequest(
      path,
      passThrough,
      passThrough,
      bytes,
      new Metadata(),
      deadline(),
    );
    stream.on('data', (message: Buffer) => call.received.push(message));
    stream.on('error', () => {});
    const timer =
      cutAfterMs === undefined
        ? undefined
        : setTimeout(() => {
            call.cancelledByUs = true;
            stream.cancel();
          }, cutAfterMs);
    stream.on('status', (ended: StatusObject) => {
      clearTimeout(timer);
      call.status = ended;
      resolve(call);
    });
  });
}

/** A bidirectional call: its record, and a promise of its end. */
function bidi(
  client: Client,
  rpc: Rpc,
  path: string,
  metadata: Metadata,
): { call: CallRecord; stream: ClientDuplexStream<Buffer, Buffer>; ended: Promise<void> } {
  const call = record(rpc, []);
  const stream = client.makeBidiStreamRequest(path, passThrough, passThrough, metadata, deadline());
  stream.on('data', (message: Buffer) => call.received.push(message));
  stream.on('error', () => {});
  const ended = new Promise<void>((resolve) =>
    stream.on('status', (finished: StatusObject) => {
      call.status = finished;
      resolve();
    }),
  );
  return { call, stream, ended };
}

/**
 * A consumer group member: its first message, a moment for the server to answer (GroupJoined,
 * assignments), the rest, then it lingers and goes away (cancels) unless the server ended the
 * stream (a refusal, or the GroupLeft that follows a LeaveGroup).
 */
async function consume(
  client: Client,
  path: string,
  messages: Buffer[],
  lingerMs: number,
): Promise<CallRecord> {
  const { call, stream, ended } = bidi(client, 'Consume', path, new Metadata());
  let over = false;
  void ended.then(() => (over = true));
  for (const [i, message] of messages.entries()) {
    if (over) break;
    call.sent.push(message);
    stream.write(message);
    await sleep(i === 0 ? 100 : 10);
  }
  await Promise.race([ended, sleep(lingerMs)]);
  if (!over) {
    // A member that said LeaveGroup is answered GroupLeft and the stream ends: wait for that.
    await Promise.race([ended, sleep(1000)]);
  }
  if (!over) {
    call.cancelledByUs = true;
    stream.cancel();
  }
  await ended;
  return call;
}

/** A Pipeline stream: every message sent, the stream half-closed, every answer read to its end. */
async function pipeline(
  client: Client,
  path: string,
  messages: Buffer[],
  metadata: Metadata,
): Promise<CallRecord> {
  const { call, stream, ended } = bidi(client, 'Pipeline', path, metadata);
  for (const message of messages) {
    call.sent.push(message);
    stream.write(message);
  }
  stream.end();
  await ended;
  return call;
}
