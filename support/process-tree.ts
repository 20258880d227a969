import { readdirSync, readFileSync } from 'node:fs';

interface ProcessEntry {
  pid: number;
  parent: number;
  /** One letter of /proc/<pid>/stat: R running, S sleeping, Z zombie (exited, not yet reaped), ... */
  state: string;
}

/** A process as /proc/<pid>/stat shows it, or undefined when it is gone. */
function entry(pid: number): ProcessEntry | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name is in parentheses and may itself hold spaces and parentheses: read after the last.
  const [state, parent] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { pid, parent: Number(parent), state: state! };
}

/** A process and all its descendants, as they are now (Linux). */
export function processTree(root: number): number[] {
  const all = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map((name) => entry(Number(name)))
    .filter((found): found is ProcessEntry => found !== undefined);
  const tree = [root];
  for (let index = 0; index < tree.length; index += 1)
    for (const child of all) if (child.parent === tree[index]) tree.push(child.pid);
  return tree;
}

/**
 * Whether a process still runs. A zombie has exited: it stays listed until its parent reaps it, which an
 * init that does not reap (some containers') never does.
 */
export function isRunning(pid: number): boolean {
  const found = entry(pid);
  return found !== undefined && found.state !== 'Z';
}

/** The command line of a process, for messages ('' when it is gone). */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return '';
  }
}
