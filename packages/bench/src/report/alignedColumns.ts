// A plain-text table: each column as wide as its widest cell, the first (the row's name) left
// aligned and the figures right aligned, two spaces apart.

export function alignedColumns(
  header: readonly string[],
  rows: readonly (readonly string[])[],
): string[] {
  const widths = header.map((_, column) =>
    Math.max(...[header, ...rows].map((row) => row[column]!.length)),
  );
  const line = (row: readonly string[]) =>
    row
      .map((cell, column) =>
        column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!),
      )
      .join('  ');
  return [header, ...rows].map(line);
}
