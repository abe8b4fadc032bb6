// A cell as the CLI prints it: its coordinates, then its body in the JSON forms of bodyJson.ts.
// A body that cannot be read (stored around the server: nested deeper than the reader reads, or
// not MessagePack) prints as null with `unreadable` saying why, so that `tail` and `where` go on
// to the next cell.
import type { Cell } from '@shameless/proto';
import { UnreadableBody, bodyToJson } from './bodyJson.js';

export function cellToJson(cell: Cell): Record<string, unknown> {
  const coordinates = {
    uuid: cell.uuid,
    cell: cell.name,
    refKey: cell.refKey,
    id: cell.id,
    shard: cell.shard,
    createdAt: cell.createdAt,
  };
  try {
    return {
      ...coordinates,
      body: bodyToJson(cell.body, `cell ${cell.name}@${cell.refKey} of record ${cell.uuid}`),
    };
  } catch (error) {
    if (!(error instanceof UnreadableBody)) throw error;
    return { ...coordinates, body: null, unreadable: error.message };
  }
}
