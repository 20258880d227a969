import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, onTestFinished } from 'vitest';
import { createPatchloopGateway, listen } from '../../src/gateway/gateway';
import { createKey } from '../../src/gateway/keys';
import type { AgentDefinitionInput } from '../../src/runtime';
import { repositoryRoot } from '../../support/repository';
import type { TestWorld } from './temporal';

/**
 * A test file's keys file with two principals of that file only (listings by principal span the
 * namespace the test files share), removed after the file; and a gateway over a world's client with
 * them, on any free port, closed when its test ends.
 */
export function gatewayKeys(agents: AgentDefinitionInput[]) {
  const folder = mkdtempSync(join(tmpdir(), 'gateway-keys-'));
  const keysFile = join(folder, 'keys.json');
  const tag = randomUUID().slice(0, 8);
  const alice = createKey(keysFile, `alice-${tag}`).key;
  const bob = createKey(keysFile, `bob-${tag}`).key;
  afterAll(() => rmSync(folder, { recursive: true, force: true }));
  const gatewayOf = async (world: TestWorld) => {
    const gateway = await listen(
      createPatchloopGateway({ client: world.client, keysFile, agents, log: () => undefined }).app,
      '127.0.0.1',
      0,
    );
    onTestFinished(() => gateway.close());
    return gateway;
  };
  return { folder, keysFile, tag, alice, bob, gatewayOf };
}

/** The fenced blocks of a language in a docs page, in order. */
export function documentedBlocks(page: string, language: string): string[] {
  const text = readFileSync(join(repositoryRoot, 'docs', page), 'utf8');
  return [...text.matchAll(new RegExp('```' + language + '\\n([\\s\\S]*?)```', 'g'))].map((block) => block[1]!);
}
