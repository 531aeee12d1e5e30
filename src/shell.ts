// Quoting for the sh scripts the operator renders and the local node agent runs.

/** `text` as one single-quoted sh word, whatever it contains. */
export function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}
