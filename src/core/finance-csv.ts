import { stringify } from 'csv-stringify/sync';

/** A CSV column: its header, and the cell it reads from a row (null is an empty cell). */
export type CsvColumn<Row> = readonly [name: string, cell: (row: Row) => string | null];

/**
 * The one way plainpay writes a CSV for finance (the actions, payouts and reconciliation exports):
 * RFC 4180 by csv-stringify; a UTF-8 byte order mark, so that Excel reads memos and names in UTF-8
 * rather than the machine's code page (other spreadsheets and CSV libraries skip it); a header row;
 * CRLF line ends; a cell a spreadsheet would run as a formula (a memo starting with "=") prefixed
 * with a quote, since memos and references are written by merchants and their payers.
 */
export function financeCsv<Row>(columns: readonly CsvColumn<Row>[], rows: readonly Row[]): string {
  return stringify(
    rows.map((row) => columns.map(([, cell]) => cell(row) ?? '')),
    {
      bom: true,
      header: true,
      columns: columns.map(([name]) => name),
      record_delimiter: 'windows',
      escape_formulas: true,
    },
  );
}
