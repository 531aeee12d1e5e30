// Quoting for the sh scripts the operator renders into its containers.

/** `text` as one single-quoted sh word, whatever it contains. */
export function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}
