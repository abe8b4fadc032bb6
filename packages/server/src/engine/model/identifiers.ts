// Every name that ends up inside SQL (as an identifier) passes through here first. Only
// lowercase letters, digits and underscores, starting with a letter: nothing to quote, nothing
// to escape, and the same on case-sensitive and case-insensitive file systems.

const IDENTIFIER = /^[a-z][a-z0-9_]*$/;
export const MYSQL_IDENTIFIER_MAX = 64;

export function isIdentifier(name: string, maxLength = MYSQL_IDENTIFIER_MAX): boolean {
  return name.length <= maxLength && IDENTIFIER.test(name);
}

/** Backtick-quotes an identifier that has already been validated. */
export function quoteIdentifier(name: string): string {
  if (!isIdentifier(name)) {
    throw new Error(`refusing to quote an unvalidated identifier: ${JSON.stringify(name)}`);
  }
  return `\`${name}\``;
}

/** A namespace is an identifier or empty (no prefix). */
export function isNamespace(name: string): boolean {
  return name === '' || isIdentifier(name);
}
