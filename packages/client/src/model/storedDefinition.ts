// Whether a model the store already holds serves a schema this client compiled. A client whose
// token may not define models (DefineModel needs the admin role) can still use a model an admin
// defined, as long as the stored one has every index and cell the schema names, shaped alike.
import type { IndexDefinition, ModelDefinition } from '@shameless/proto';

/** What the stored model lacks for the requested one, or undefined when it serves it. */
export function storedModelLacks(
  stored: ModelDefinition,
  requested: ModelDefinition,
): string | undefined {
  const primary = indexDifference(stored.primaryIndex, requested.primaryIndex);
  if (primary) return `its primary index ${primary}`;
  for (const index of requested.secondaryIndices) {
    const match = stored.secondaryIndices.find((candidate) => candidate.name === index.name);
    const difference = match
      ? indexDifference(match, index)
      : `is missing (stored: ${stored.secondaryIndices.map((i) => i.name).join(', ') || 'none'})`;
    if (difference) return `its secondary index ${index.name} ${difference}`;
  }
  const missingCells = requested.cells.filter((cell) => !stored.cells.includes(cell));
  if (missingCells.length > 0) return `it has no cell ${missingCells.join(', ')}`;
  return undefined;
}

function indexDifference(
  stored: IndexDefinition | undefined,
  requested: IndexDefinition | undefined,
): string | undefined {
  const shape = (index: IndexDefinition | undefined) =>
    index
      ? `(${index.fields.map((field) => `${field.name}:${field.type}`).join(', ')}) on ${index.shardOn}`
      : 'none';
  const [have, want] = [shape(stored), shape(requested)];
  return have === want ? undefined : `is ${have}, not ${want}`;
}
