import { spawnSync } from 'node:child_process';
import { chromium, type Browser } from 'playwright-core';

/**
 * The machine's Chromium (Debian's `chromium`, installed by scripts/setup.sh), driven by playwright-core.
 * A missing browser fails the test that asks for it: browser tests never skip.
 */
export function chromiumPath(): string {
  const given = process.env['PATCHLOOP_CHROMIUM'];
  if (given) return given;
  for (const name of ['chromium', 'chromium-browser', 'google-chrome']) {
    const found = spawnSync('which', [name], { encoding: 'utf8' });
    if (found.status === 0 && found.stdout.trim()) return found.stdout.trim();
  }
  throw new Error('no Chromium found: run bash scripts/setup.sh (apt-get install chromium), or set PATCHLOOP_CHROMIUM');
}

export function launchBrowser(): Promise<Browser> {
  // --no-sandbox: CI and this machine run as root, where Chromium's sandbox refuses to start.
  return chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox', '--disable-gpu'] });
}
