/**
 * The words of a command line as the docs write it, quotes removed (enough for the commands docs show:
 * no expansions are evaluated).
 */
export function shellWords(command: string): string[] {
  const found: string[] = [];
  for (const match of command.matchAll(/'([^']*)'|"((?:[^"\\]|\\.)*)"|(\S+)/g))
    found.push(match[1] ?? match[2] ?? match[3]!);
  return found;
}
