import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { repositoryRoot } from '../../support/repository';

/**
 * CPU seconds this process and the children it has waited for have used (Linux: /proc/self/stat, in
 * clock ticks of 1/100 s): a test file's own work and the CLI and worker processes it started, which
 * a loaded machine does not inflate as it does wall time.
 */
export function cpuSeconds(pid: number | 'self' = 'self'): number {
  const file = `/proc/${pid}/stat`;
  if (!existsSync(file)) return 0;
  const stat = readFileSync(file, 'utf8');
  // After the command name (in parentheses): utime, stime, cutime and cstime are fields 12 to 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields.slice(11, 15).reduce((sum, ticks) => sum + Number(ticks), 0) / 100;
}

/** Appends `name<TAB>seconds` (a file, `file > test`, or a process) to PATCHLOOP_TEST_CPU_FILE (set by scripts/test.sh), for the summary. */
export function recordCpu(name: string, seconds: number): void {
  const target = process.env['PATCHLOOP_TEST_CPU_FILE'];
  if (target) appendFileSync(target, `${relative(repositoryRoot, name)}\t${seconds.toFixed(1)}\n`);
}
