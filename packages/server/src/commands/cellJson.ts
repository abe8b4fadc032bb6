// A cell as the CLI prints it: its coordinates, then its body in the JSON forms of bodyJson.ts.
import type { Cell } from '@shameless/proto';
import { bodyToJson } from './bodyJson.js';

export function cellToJson(cell: Cell): Record<string, unknown> {
  return {
    uuid: cell.uuid,
    cell: cell.name,
    refKey: cell.refKey,
    id: cell.id,
    shard: cell.shard,
    createdAt: cell.createdAt,
    body: bodyToJson(cell.body, `cell ${cell.name}@${cell.refKey} of record ${cell.uuid}`),
  };
}
