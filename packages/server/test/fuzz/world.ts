// What the fuzzer's store holds before the first fuzzed request, so that requests reach past
// "no such model" into the code that reads and writes records: two models, records of each, a
// consumer group with a parked cell. Requests name records by slot ('@record:3'), resolved to a
// uuid when sent, so that a seed generates the same requests whatever uuids the store chose.
import { FieldType, type ModelDefinition } from '@shameless/proto';

export const SHARDS_COUNT = 4;
export const NAMESPACE = 'fz';
/** The consumer group the setup joins, parks a cell in and leaves. */
export const GROUP = 'fuzz';
/** Records the setup creates per model. */
export const RECORDS_PER_MODEL = 8;

const integer = FieldType.FIELD_TYPE_INTEGER;
const string = FieldType.FIELD_TYPE_STRING;

export const MODELS: readonly ModelDefinition[] = [
  {
    name: 'rate',
    primaryIndex: {
      name: '',
      fields: [
        { name: 'hotel_id', type: integer },
        { name: 'room_type', type: string },
        { name: 'check_in_date', type: string },
      ],
      shardOn: 'hotel_id',
    },
    secondaryIndices: [
      {
        name: 'secondary',
        fields: [
          { name: 'hotel_id', type: integer },
          { name: 'gateway', type: string },
        ],
        shardOn: 'hotel_id',
      },
    ],
    cells: ['meta'],
  },
  {
    name: 'event',
    primaryIndex: {
      name: '',
      fields: [{ name: 'stream_id', type: integer }],
      shardOn: 'stream_id',
    },
    secondaryIndices: [
      {
        name: 'by_kind',
        fields: [
          { name: 'kind', type: string },
          { name: 'stream_id', type: integer },
        ],
        shardOn: 'stream_id',
      },
    ],
    cells: ['audit'],
  },
];

export const MODEL_NAMES = MODELS.map((model) => model.name);
/** Identifiers no model has; DefineModel may create models of these names, and only these. */
export const NEW_MODEL_NAMES = ['fz_a', 'fz_b', 'fz_c', 'fz_d'];
export const INDEX_NAMES = [
  '',
  'primary',
  ...MODELS.flatMap((m) => m.secondaryIndices.map((i) => i.name)),
];
export const CELL_NAMES = ['base', '', ...MODELS.flatMap((model) => model.cells)];
/** Cell names DefineModel may add to a model. */
export const NEW_CELL_NAMES = ['c1', 'c2', 'c3'];

/** Every field of every index of a model, once each, with its type. */
export function indexFields(model: ModelDefinition): { name: string; type: FieldType }[] {
  const fields = new Map<string, FieldType>();
  for (const index of [model.primaryIndex!, ...model.secondaryIndices]) {
    for (const field of index.fields) fields.set(field.name, field.type);
  }
  return [...fields].map(([name, type]) => ({ name, type }));
}

export const ALL_INDEX_FIELDS = [
  ...new Set(MODELS.flatMap((m) => indexFields(m).map((f) => f.name))),
];

/** The values the setup puts for record `n` of a model: every index field set. */
export function seedValues(model: ModelDefinition, n: number): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const field of indexFields(model)) {
    values[field.name] = field.type === integer ? n : `seed-${n}`;
  }
  return { ...values, note: `record ${n}`, price: n * 10 };
}

export const RECORD_SLOT = '@record:';
export const FRESH_REQUEST_ID = '@fresh';
export const AGAIN_REQUEST_ID = '@again:';
