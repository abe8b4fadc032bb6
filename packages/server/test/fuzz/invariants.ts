// What must hold of every answer, whatever was asked: a status from the contract's table
// (never INTERNAL or UNKNOWN), INVALID_ARGUMENT naming its field, a message with no stack trace,
// SQL or credential in it, responses that decode, and cell bodies the SDK's decoder reads: a
// body the server accepted that the SDK cannot read is a record no SDK reader can use. It also
// tells, for each request id a case carried, whether the write was refused (so nothing of it
// may be in the store) or written (so it must be).
import { status } from '@grpc/grpc-js';
import {
  type CallError,
  type PipelineRequest,
  type PipelineResponse,
  type PutManyResponse,
  type WriteCellsResponse,
  PipelineRequest as PipelineRequestCodec,
  PipelineResponse as PipelineResponseCodec,
  isPlainObject,
  readMessagePack,
} from '@shameless/proto';
import type { CallRecord } from './exchange.js';
import { contractOf, tryDecode } from './contract.js';

/** Statuses a Store call may end with, whatever it was sent. */
const ALLOWED: ReadonlySet<status> = new Set([
  status.OK,
  status.INVALID_ARGUMENT,
  status.NOT_FOUND,
  status.FAILED_PRECONDITION,
  status.ABORTED,
  status.ALREADY_EXISTS,
  status.RESOURCE_EXHAUSTED,
]);

/** Statuses after which the server did nothing for the write: the contract says so of each. */
const REFUSALS: ReadonlySet<status> = new Set([...ALLOWED].filter((code) => code !== status.OK));

/** The most bytes of a status message (statusMapping.ts). */
const MAX_MESSAGE_BYTES = 2048;

/** What must never reach a client, unless the request itself holds it (a name echoed back). */
const LEAKS: readonly [string, RegExp][] = [
  ['a stack trace', /\n\s+at |\bat (?:async )?\S+ \(?(?:file:|node:|\/)\S+:\d+/],
  ['a source path', /\/(?:work|home|usr|tmp)\/\S+\.[cm]?[jt]s\b|node_modules|node:internal/],
  [
    'SQL',
    /\b(?:SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP)\b[^]{0,80}?\b(?:FROM|INTO|TABLE|SET|WHERE|VALUES)\b/i,
  ],
  ['a MySQL error', /\bER_[A-Z_]{3,}|\bsqlState\b|\berrno\b|You have an error in your SQL syntax/],
  ['a credential', /mysql:\/\/|\bpassword\b|root@/i],
];

export const codeName = (code: number) => status[code] ?? String(code);

/** Problems with one status (the call's, a Pipeline call's, a batch item's). */
function statusProblems(
  where: string,
  code: number,
  message: string,
  field: string | undefined,
  requestText: string,
  allowed: ReadonlySet<number>,
): string[] {
  const problems: string[] = [];
  if (!allowed.has(code)) problems.push(`${where} ended ${codeName(code)}: ${message}`);
  if (code === status.OK) return problems;
  if (code === status.INVALID_ARGUMENT && field !== undefined && field === '') {
    problems.push(`${where}: INVALID_ARGUMENT names no field (shameless-field): ${message}`);
  }
  if (Buffer.byteLength(message) > MAX_MESSAGE_BYTES) {
    problems.push(`${where}: a status message of ${Buffer.byteLength(message)} bytes`);
  }
  for (const [what, pattern] of LEAKS) {
    const leaked = pattern.exec(message)?.[0];
    if (leaked !== undefined && !requestText.includes(leaked)) {
      problems.push(`${where}: the message holds ${what} (${JSON.stringify(leaked)}): ${message}`);
    }
  }
  return problems;
}

/** Why a stored body would fail the SDK's decodeBody, or undefined when it reads. */
export function unreadableBody(body: Uint8Array): string | undefined {
  if (body.length === 0) return undefined;
  let value: unknown;
  try {
    value = readMessagePack(body);
  } catch (error) {
    return `the SDK's decoder fails on it: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`;
  }
  if (value instanceof Map || isPlainObject(value)) return undefined;
  return 'it is not a MessagePack map';
}

/** Every cell in a decoded message, however deep. */
function cellsIn(message: unknown, found: { uuid: string; name: string; body: Uint8Array }[] = []) {
  if (Array.isArray(message)) {
    for (const item of message) cellsIn(item, found);
  } else if (message !== null && typeof message === 'object' && !(message instanceof Uint8Array)) {
    const object = message as Record<string, unknown>;
    if (
      object.body instanceof Uint8Array &&
      typeof object.uuid === 'string' &&
      'refKey' in object
    ) {
      found.push(object as never);
    }
    for (const value of Object.values(object)) cellsIn(value, found);
  }
  return found;
}

/** What the responses of a call hold that no answer may: undecodable messages, unreadable bodies. */
function responseProblems(call: CallRecord): string[] {
  const codec = contractOf(call.rpc).response;
  const problems: string[] = [];
  for (const [i, bytes] of call.received.entries()) {
    const message = tryDecode(codec, bytes);
    if (message === undefined) {
      problems.push(`${call.rpc}: response message ${i} does not decode as its type`);
      continue;
    }
    for (const cell of cellsIn(message)) {
      const why = unreadableBody(cell.body);
      if (why) {
        problems.push(
          `${call.rpc}: the server answered a body (cell ${cell.name} of ${cell.uuid}, ${cell.body.length} bytes) that no SDK reader can use: ${why}`,
        );
      }
    }
  }
  return problems;
}

const requestTextOf = (call: CallRecord) => Buffer.concat(call.sent).toString('latin1');

/** The problems of one call, answered as it was. */
export function callProblems(call: CallRecord): string[] {
  const requestText = requestTextOf(call);
  const allowed = new Set<number>(ALLOWED);
  if (call.cancelledByUs) allowed.add(status.CANCELLED);
  const field = call.status.metadata.get('shameless-field')[0];
  const problems = statusProblems(
    call.rpc,
    call.status.code,
    call.status.details,
    call.status.code === status.INVALID_ARGUMENT ? String(field ?? '') : undefined,
    requestText,
    allowed,
  );
  problems.push(...responseProblems(call));
  if (call.rpc === 'PutMany' || call.rpc === 'WriteCells') {
    problems.push(...batchProblems(call.rpc, call.received[0], requestText, ''));
  }
  if (call.rpc === 'Pipeline') problems.push(...pipelineProblems(call, requestText));
  return problems;
}

/** Batch answers: each refused item says why, with a status the contract names. */
function batchProblems(
  rpc: 'PutMany' | 'WriteCells',
  bytes: Uint8Array | PutManyResponse | WriteCellsResponse | undefined,
  requestText: string,
  where: string,
): string[] {
  if (bytes === undefined) return [];
  const response =
    bytes instanceof Uint8Array
      ? (tryDecode(contractOf(rpc).response, bytes) as
          PutManyResponse | WriteCellsResponse | undefined)
      : bytes;
  if (!response) return [];
  const problems: string[] = [];
  for (const [i, result] of response.results.entries()) {
    if (result.outcome?.$case !== 'error') continue;
    const { code, message } = result.outcome.error;
    problems.push(
      ...statusProblems(
        `${where}${rpc} results[${i}]`,
        code,
        message,
        undefined,
        requestText,
        REFUSALS,
      ),
    );
  }
  return problems;
}

/** The calls of a Pipeline stream, by id: what each asked (its timeout, whether it was cancelled). */
function pipelineCalls(call: CallRecord) {
  const calls = new Map<number, { timeoutMs: number; cancelled: boolean }>();
  for (const bytes of call.sent) {
    const request = tryDecode(PipelineRequestCodec, bytes) as PipelineRequest | undefined;
    if (!request) continue;
    const known = calls.get(request.callId) ?? { timeoutMs: 0, cancelled: false };
    if (request.call?.$case === 'cancel') known.cancelled = true;
    else known.timeoutMs = Math.max(known.timeoutMs, request.timeoutMs);
    calls.set(request.callId, known);
  }
  return calls;
}

function pipelineProblems(call: CallRecord, requestText: string): string[] {
  const problems: string[] = [];
  const calls = pipelineCalls(call);
  for (const bytes of call.received) {
    const answer = tryDecode(PipelineResponseCodec, bytes) as PipelineResponse | undefined;
    if (!answer?.result) continue;
    const where = `Pipeline call ${answer.callId}`;
    const asked = calls.get(answer.callId);
    if (answer.result.$case === 'error') {
      const error: CallError = answer.result.error;
      const allowed = new Set<number>(ALLOWED);
      // A call's own timeout, and its cancel, end it as the contract says.
      if (asked && asked.timeoutMs > 0) allowed.add(status.DEADLINE_EXCEEDED);
      if (asked?.cancelled) allowed.add(status.CANCELLED);
      problems.push(
        ...statusProblems(
          where,
          error.code,
          error.message,
          error.code === status.INVALID_ARGUMENT
            ? (error.trailers['shameless-field'] ?? '')
            : undefined,
          requestText,
          allowed,
        ),
      );
    } else if (answer.result.$case === 'putMany') {
      problems.push(...batchProblems('PutMany', answer.result.putMany, requestText, `${where}: `));
    } else if (answer.result.$case === 'writeCells') {
      problems.push(
        ...batchProblems('WriteCells', answer.result.writeCells, requestText, `${where}: `),
      );
    }
  }
  return problems;
}

// What happened to each write.

export type Fate = 'written' | 'refused' | 'unknown';

interface WriteRequests {
  /** Request ids of the writes, in order; a batch's in its order. */
  readonly ids: string[];
  readonly batch: boolean;
}

/** The writes a request message carries, by its RPC (a Pipeline call by its oneof case). */
function writesOf(kind: string, message: unknown): WriteRequests | undefined {
  const request = message as Record<string, unknown>;
  switch (kind) {
    case 'Put':
    case 'put':
    case 'WriteCell':
    case 'writeCell':
      return { ids: [String(request.requestId)], batch: false };
    case 'PutMany':
    case 'putMany':
      return {
        ids: (request.puts as { requestId: string }[]).map((p) => p.requestId),
        batch: true,
      };
    case 'WriteCells':
    case 'writeCells':
      return {
        ids: (request.writes as { requestId: string }[]).map((w) => w.requestId),
        batch: true,
      };
    default:
      return undefined;
  }
}

/** Fates of the writes of one answer: `answer` is the decoded response, or the call's error code. */
function fatesOf(writes: WriteRequests, answer: { code: number } | { response: unknown }): Fate[] {
  if ('code' in answer) {
    return writes.ids.map(() => (REFUSALS.has(answer.code) ? 'refused' : 'unknown'));
  }
  if (!writes.batch) return writes.ids.map(() => 'written');
  const results =
    (answer.response as { results?: { outcome?: { $case: string } }[] }).results ?? [];
  return writes.ids.map((_, i) => {
    const outcome = results[i]?.outcome?.$case;
    return outcome === 'error' ? 'refused' : outcome === undefined ? 'unknown' : 'written';
  });
}

/**
 * The fate of every request id the calls carried: written when any call wrote it, refused when
 * every call that carried it was refused, else unknown (a call cut short may have written it).
 */
export function writeFates(calls: readonly CallRecord[]): Map<string, Fate> {
  const seen = new Map<string, Fate[]>();
  const note = (writes: WriteRequests, fates: Fate[]) =>
    writes.ids.forEach((id, i) => seen.set(id, [...(seen.get(id) ?? []), fates[i]!]));
  for (const call of calls) {
    if (call.rpc === 'Pipeline') {
      notePipeline(call, note);
      continue;
    }
    const request = tryDecode(contractOf(call.rpc).request, call.sent[0] ?? Buffer.alloc(0));
    const writes = request === undefined ? undefined : writesOf(call.rpc, request);
    if (!writes) continue;
    const response =
      call.status.code === status.OK && call.received[0]
        ? tryDecode(contractOf(call.rpc).response, call.received[0])
        : undefined;
    note(
      writes,
      fatesOf(writes, response === undefined ? { code: call.status.code } : { response }),
    );
  }
  const fates = new Map<string, Fate>();
  for (const [id, all] of seen) {
    // An id carried twice in one case (a batch naming it twice) is the server's to resolve.
    const carried = all.length;
    fates.set(
      id,
      all.includes('written')
        ? 'written'
        : all.every((fate) => fate === 'refused') && carried > 0
          ? 'refused'
          : 'unknown',
    );
  }
  return fates;
}

function notePipeline(call: CallRecord, note: (writes: WriteRequests, fates: Fate[]) => void) {
  // Every call of an id (a cancel is no call), and the writes of those that write.
  const byId = new Map<number, (WriteRequests | undefined)[]>();
  for (const bytes of call.sent) {
    const request = tryDecode(PipelineRequestCodec, bytes) as PipelineRequest | undefined;
    const kind = request?.call?.$case;
    if (!request || !kind || kind === 'cancel') continue;
    const writes = writesOf(kind, (request.call as Record<string, unknown>)[kind]);
    byId.set(request.callId, [...(byId.get(request.callId) ?? []), writes]);
  }
  const answers = new Map<number, NonNullable<PipelineResponse['result']>>();
  for (const bytes of call.received) {
    const answer = tryDecode(PipelineResponseCodec, bytes) as PipelineResponse | undefined;
    if (answer?.result) answers.set(answer.callId, answer.result);
  }
  for (const [id, sent] of byId) {
    const result = answers.get(id);
    for (const writes of sent) {
      if (!writes) continue;
      // Unanswered, or two calls of one id (which answer is whose is not known).
      if (!result || sent.length > 1) {
        note(
          writes,
          writes.ids.map(() => 'unknown'),
        );
        continue;
      }
      const response = (result as Record<string, unknown>)[result.$case];
      note(
        writes,
        result.$case === 'error'
          ? fatesOf(writes, { code: result.error.code })
          : fatesOf(writes, { response }),
      );
    }
  }
}
