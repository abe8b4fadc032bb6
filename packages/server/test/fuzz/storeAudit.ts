// What must hold of the store, read with plain SQL behind the server's back: a refused write
// left no row and an acknowledged one did; a refused DefineModel created no table; every cell's
// versions run 0..n-1 with no gap; no cell of a record without its base version 0; every record
// has exactly one row in each index, in the right shard, holding its values; no index row
// without its record; every stored body reads with the SDK's decoder. The sweep reads only the
// rows added since the last one, so that it stays cheap as the store grows.
import type { ModelDefinition } from '@shameless/proto';
import type mysql from 'mysql2/promise';
import { readMessagePack } from '@shameless/proto';
import { type Fate, unreadableBody } from './invariants.js';
import { NAMESPACE } from './world.js';

type Row = mysql.RowDataPacket;

const pad = (shard: number) => String(shard).padStart(6, '0');
const contentTable = (model: string, shard: number) => `${NAMESPACE}_${model}_${pad(shard)}`;
const indexTable = (model: string, index: string, shard: number) =>
  `${NAMESPACE}_${model}_${index}_index_${pad(shard)}`;
const floorMod = (value: bigint, by: number) =>
  Number(((value % BigInt(by)) + BigInt(by)) % BigInt(by));
/** The most rows one sweep step reads from a table. */
const PAGE = 2000;

export class StoreAudit {
  /** Per content table, the highest id the sweep has checked. */
  private readonly checkedUpTo = new Map<string, string>();

  constructor(
    private readonly sql: mysql.Pool,
    private readonly shardsCount: number,
  ) {}

  private async query(text: string, values: unknown[] = []): Promise<Row[]> {
    const [rows] = await this.sql.query<Row[]>(text, values);
    return rows;
  }

  private shards(): number[] {
    return Array.from({ length: this.shardsCount }, (_, shard) => shard);
  }

  /**
   * Rows of the writes one case made, its fresh request ids being the range [first, last]:
   * none for a refused write, one at least for an acknowledged one.
   */
  async writeProblems(
    models: readonly ModelDefinition[],
    first: string,
    last: string,
    fates: ReadonlyMap<string, Fate>,
  ): Promise<string[]> {
    if (models.length === 0) return [];
    const parts = models.flatMap((model) =>
      this.shards().map(
        (shard) =>
          `SELECT request_id, uuid, column_name, ref_key FROM \`${contentTable(model.name, shard)}\` WHERE request_id BETWEEN ? AND ?`,
      ),
    );
    const rows = await this.query(
      parts.join(' UNION ALL '),
      parts.flatMap(() => [first, last]),
    );
    const stored = new Map<string, Row>();
    for (const row of rows) stored.set(String(row.request_id), row);
    const problems: string[] = [];
    for (const [id, fate] of fates) {
      if (id < first || id > last) continue;
      const row = stored.get(id);
      if (fate === 'refused' && row) {
        problems.push(
          `a refused write was stored: request id ${id} is ${row.uuid} ${row.column_name} version ${row.ref_key}`,
        );
      }
      if (fate === 'written' && !row) {
        problems.push(`an acknowledged write is not in the store: request id ${id} has no row`);
      }
    }
    return problems;
  }

  /** Tables of models that DefineModel refused and that no earlier call defined. */
  async refusedDefineProblems(database: string, names: readonly string[]): Promise<string[]> {
    const problems: string[] = [];
    for (const name of names) {
      const rows = await this.query(
        `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ? AND table_name LIKE ?`,
        [database, `${NAMESPACE}\\_${name.replace(/_/g, '\\_')}\\_%`],
      );
      if (rows.length > 0) {
        problems.push(
          `DefineModel of ${name} was refused, yet its tables exist: ${rows.map((row) => String(row.name)).join(', ')}`,
        );
      }
    }
    return problems;
  }

  /** Every rule of the file comment, over the rows added since the last sweep. */
  async sweep(models: readonly ModelDefinition[]): Promise<string[]> {
    const problems: string[] = [];
    for (const model of models) problems.push(...(await this.sweepModel(model)));
    return problems;
  }

  private async sweepModel(model: ModelDefinition): Promise<string[]> {
    const problems: string[] = [];
    const created = new Map<string, Record<string, unknown>>();
    for (const shard of this.shards()) {
      const table = contentTable(model.name, shard);
      const from = this.checkedUpTo.get(table) ?? '0';
      let upTo = from;
      for (;;) {
        const rows = await this.query(
          `SELECT id, uuid, column_name, ref_key, request_id, body FROM \`${table}\` WHERE id > ? ORDER BY id LIMIT ${PAGE}`,
          [upTo],
        );
        for (const row of rows) {
          const where = `${table} id ${row.id} (${row.uuid} ${row.column_name} version ${row.ref_key}, request id ${row.request_id})`;
          const body = row.body as Buffer | null;
          const why = body ? unreadableBody(body) : undefined;
          if (why) problems.push(`${where}: a stored body no SDK reader can use: ${why}`);
          if (Number.parseInt(String(row.uuid).slice(0, 4), 16) % this.shardsCount !== shard) {
            problems.push(`${where}: a cell in the wrong content shard`);
          }
          if (row.column_name === 'base' && Number(row.ref_key) === 0 && body && !why) {
            created.set(String(row.uuid), readMessagePack(body) as Record<string, unknown>);
          }
        }
        if (rows.length === 0) break;
        upTo = String(rows[rows.length - 1]!.id);
        if (rows.length < PAGE) break;
      }
      problems.push(...(await this.versionProblems(table, from)));
      this.checkedUpTo.set(table, upTo);
    }
    problems.push(...(await this.indexProblems(model, created)));
    return problems;
  }

  /** Versions after a gap, and cells of records with no base version 0, among rows after `from`. */
  private async versionProblems(table: string, from: string): Promise<string[]> {
    const gaps = await this.query(
      `SELECT n.id, n.uuid, n.column_name, n.ref_key FROM \`${table}\` n
       LEFT JOIN \`${table}\` p ON p.uuid = n.uuid AND p.column_name = n.column_name AND p.ref_key = n.ref_key - 1
       WHERE n.id > ? AND (n.ref_key < 0 OR (n.ref_key > 0 AND p.id IS NULL)) LIMIT 10`,
      [from],
    );
    const orphans = await this.query(
      `SELECT n.id, n.uuid, n.column_name, n.ref_key FROM \`${table}\` n
       LEFT JOIN \`${table}\` b ON b.uuid = n.uuid AND b.column_name = 'base' AND b.ref_key = 0
       WHERE n.id > ? AND b.id IS NULL LIMIT 10`,
      [from],
    );
    return [
      ...gaps.map(
        (row) =>
          `${table} id ${row.id}: ${row.uuid} ${row.column_name} version ${row.ref_key} without the version before it`,
      ),
      ...orphans.map(
        (row) =>
          `${table} id ${row.id}: ${row.uuid} ${row.column_name} version ${row.ref_key} of a record with no base version 0`,
      ),
    ];
  }

  /** Index rows of the records created since the last sweep, and index rows without a record. */
  private async indexProblems(
    model: ModelDefinition,
    created: ReadonlyMap<string, Record<string, unknown>>,
  ): Promise<string[]> {
    const problems: string[] = [];
    const indices = [{ ...model.primaryIndex!, name: 'primary' }, ...model.secondaryIndices];
    const records = await this.countOver(
      this.shards().map(
        (shard) =>
          `SELECT COUNT(*) AS n FROM \`${contentTable(model.name, shard)}\` WHERE column_name = 'base' AND ref_key = 0`,
      ),
    );
    for (const index of indices) {
      const tables = this.shards().map((shard) => indexTable(model.name, index.name, shard));
      const rows = await this.countOver(
        tables.map((table) => `SELECT COUNT(*) AS n FROM \`${table}\``),
      );
      if (rows !== records) {
        problems.push(
          `${model.name}: ${records} records (base version 0) but ${rows} rows in index ${index.name}`,
        );
      }
      if (created.size === 0) continue;
      const uuids = [...created.keys()];
      const found = await this.query(
        tables
          .map(
            (table, shard) =>
              `SELECT ${shard} AS shard, t.* FROM \`${table}\` t WHERE uuid IN (${uuids.map(() => '?').join(', ')})`,
          )
          .join(' UNION ALL '),
        tables.flatMap(() => uuids),
      );
      const byUuid = new Map<string, Row[]>();
      for (const row of found)
        byUuid.set(String(row.uuid), [...(byUuid.get(String(row.uuid)) ?? []), row]);
      for (const [uuid, body] of created) {
        const held = byUuid.get(uuid) ?? [];
        if (held.length !== 1) {
          problems.push(
            `${model.name} record ${uuid}: ${held.length} rows in index ${index.name}, not 1`,
          );
          continue;
        }
        const row = held[0]!;
        for (const field of index.fields) {
          const sent = body[field.name];
          const same =
            typeof sent === 'string'
              ? sent === String(row[field.name])
              : (typeof sent === 'number' || typeof sent === 'bigint') &&
                BigInt(sent) === BigInt(String(row[field.name]));
          if (!same) {
            problems.push(
              `${model.name} record ${uuid}: index ${index.name} holds ${field.name} = ${String(row[field.name])}, its base version 0 ${String(sent)}`,
            );
          }
        }
        const shardOn = body[index.shardOn];
        if (
          (typeof shardOn === 'number' || typeof shardOn === 'bigint') &&
          floorMod(BigInt(shardOn), this.shardsCount) !== Number(row.shard)
        ) {
          problems.push(
            `${model.name} record ${uuid}: its ${index.name} row is in shard ${row.shard}, not that of ${index.shardOn} = ${shardOn}`,
          );
        }
      }
    }
    return problems;
  }

  private async countOver(parts: string[]): Promise<number> {
    const rows = await this.query(`SELECT SUM(n) AS n FROM (${parts.join(' UNION ALL ')}) counts`);
    return Number(rows[0]?.n ?? 0);
  }
}
