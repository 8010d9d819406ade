// What notifyctl prints: aligned tables for people, the raw response as JSON for scripts.

export interface Column<T> {
  readonly header: string;
  readonly value: (row: T) => string | number | boolean;
  /** Longer cells are cut with an ellipsis so one free-text field cannot wreck the table. */
  readonly maxWidth?: number;
}

/** Where output goes; the process's streams in main.ts, strings in tests. */
export interface Io {
  stdout(text: string): void;
  stderr(text: string): void;
}

// Tenant-written text (subjects, SMTP replies) must not move the cursor or recolour the operator's terminal.
const controlCharacters = /[\u0000-\u001f\u007f-\u009f]+/g;

export function cell(value: string | number | boolean, maxWidth = 60): string {
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  const text = String(value).replace(controlCharacters, ' ').trim();
  if (text === '') return '-';
  return text.length > maxWidth ? `${text.slice(0, maxWidth - 1)}…` : text;
}

/** Columns separated by two spaces, padded to the widest cell; the last column is not padded. */
export function renderTable<T>(columns: readonly Column<T>[], rows: readonly T[]): string {
  const cells = [columns.map((column) => column.header), ...rows.map((row) => columns.map((column) => cell(column.value(row), column.maxWidth)))];
  const widths = columns.map((_, index) => Math.max(...cells.map((line) => (line[index] ?? '').length)));
  return `${cells
    .map((line) =>
      line
        .map((text, index) => (index === line.length - 1 ? text : text.padEnd(widths[index] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')}\n`;
}

/** Prints `response` as JSON when asked, else `rows` as a table. */
export function print<T>(io: Io, json: boolean, response: unknown, columns: readonly Column<T>[], rows: readonly T[]): void {
  io.stdout(json ? `${JSON.stringify(response, null, 2)}\n` : renderTable(columns, rows));
}
