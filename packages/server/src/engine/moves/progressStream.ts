// A mover's progress as an async iterator, for a streaming RPC (MoveShards) or a CLI that
// prints as it goes: the mover tells a callback, the stream yields what it was told, in order,
// and ends with the command (its failure thrown from the iterator after the events before it).
import type { MoveProgress } from './shardMover.js';

/**
 * Runs `start` (a mover's command given the callback to tell) and yields each progress event;
 * the iterator's return value is the command's answer. Example:
 *
 *     const events = progressStream((onProgress) =>
 *       new ShardMover(host, { onProgress }).move({ shards: [8, 9], to }));
 *     for await (const event of events) send(event);
 */
export async function* progressStream<T>(
  start: (onProgress: (progress: MoveProgress) => void) => Promise<T>,
): AsyncGenerator<MoveProgress, T, undefined> {
  const queue: MoveProgress[] = [];
  let wake: (() => void) | undefined;
  let ended = false;
  const nudge = () => {
    wake?.();
    wake = undefined;
  };
  const command = start((progress) => {
    queue.push(progress);
    nudge();
  }).finally(() => {
    ended = true;
    nudge();
  });
  // Its failure is thrown below, once the events told before it are yielded.
  command.catch(() => {});
  for (;;) {
    while (queue.length > 0) yield queue.shift()!;
    if (ended) return await command;
    await new Promise<void>((resolve) => (wake = resolve));
  }
}
