// The records this server knows exist, so that an append to a cell other than base need not
// read the record's base cell under the log lock to learn it (about a third of MariaDB's work
// for a WriteCells of existing records). A record exists once its base cell has a version, and
// nothing takes that away: content rows are never deleted, and a create that is refused rolls
// its transaction back before anything of it is seen. So an entry is never stale, whoever
// created the record (another server, the gem). Only records seen to exist are remembered: a
// record not found is asked for again next time.
//
// Bounded by entries (generationalMap.ts); an entry takes about 150 bytes of heap (a model
// name, a uuid, the Map's share).
import { GenerationalMap } from '../base/generationalMap.js';

export class KnownRecords {
  private readonly entries: GenerationalMap<true>;

  /** At most `capacity` records are remembered (an odd capacity is rounded up); 0: none. */
  constructor(readonly capacity: number) {
    this.entries = new GenerationalMap(capacity);
  }

  has(model: string, uuid: string): boolean {
    return this.entries.get(keyOf(model, uuid)) === true;
  }

  /** Remembers that the record exists: seen in a table, or created by a committed write. */
  add(model: string, uuid: string): void {
    this.entries.set(keyOf(model, uuid), true);
  }

  /** Records remembered now. */
  get size(): number {
    return this.entries.size;
  }
}

// Model names are identifiers: no space.
const keyOf = (model: string, uuid: string) => `${model} ${uuid}`;
