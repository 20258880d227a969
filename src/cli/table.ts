/** Rows as a plain-text table: each column as wide as its widest cell, two spaces between, no trailing blanks. */
export function printTable(rows: readonly string[][], print: (line: string) => void): void {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  for (const row of rows)
    print(
      row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd(),
    );
}
