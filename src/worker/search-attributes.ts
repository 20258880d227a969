import type { Connection } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { PATCHLOOP_SEARCH_ATTRIBUTES } from '../common';

const { IndexedValueType } = temporal.api.enums.v1;

/**
 * Makes sure the namespace has patchloop's search attributes, registering the missing ones. Says
 * whether runs may keep them current, and what it registered: a run that upserted an unknown attribute would fail its workflow
 * tasks forever, so without them runs simply go without (and the log says how to add them).
 */
export async function ensureSearchAttributes(
  connection:
    | Pick<NativeConnection, 'operatorService' | 'workflowService'>
    | Pick<Connection, 'operatorService' | 'workflowService'>,
  namespace: string,
  log: { info(message: string): void; warn(message: string): void },
  usableWithinMs = USABLE_WITHIN_MS,
): Promise<{ available: boolean; registered: string[] }> {
  const keys = Object.values(PATCHLOOP_SEARCH_ATTRIBUTES);
  try {
    const registered = await registerMissing(connection, namespace);
    if (registered.length > 0)
      log.info(`registered search attributes ${registered.join(', ')} on namespace ${namespace}`);
    // Registered now, or a moment ago by another worker: the server may not use them yet.
    await untilUsable(connection, namespace, log, usableWithinMs);
    return { available: true, registered };
  } catch (error) {
    const commands = keys
      .map(
        (key) =>
          `temporal operator search-attribute create --namespace ${namespace} --name ${key.name} --type ${key.type === 'INT' ? 'Int' : 'Keyword'}`,
      )
      .join('\n  ');
    log.warn(
      `runs will not keep search attributes: they are missing and could not be registered (${(error as Error).message}); an operator can add them with:\n  ${commands}`,
    );
    return { available: false, registered: [] };
  }
}

/** Registers the attributes the namespace lacks: their names (none when all are there). */
async function registerMissing(
  connection: Pick<NativeConnection, 'operatorService'> | Pick<Connection, 'operatorService'>,
  namespace: string,
): Promise<string[]> {
  const keys = Object.values(PATCHLOOP_SEARCH_ATTRIBUTES);
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  const present = customAttributes ?? {};
  // A name taken with another type would fail every upsert: runs then go without.
  const clashing = keys.filter((key) => key.name in present && present[key.name] !== indexedType(key.type));
  if (clashing.length > 0) throw new Error(`${clashing.map((key) => key.name).join(', ')} exist(s) with another type`);
  const missing = keys.filter((key) => !(key.name in present));
  if (missing.length === 0) return [];
  try {
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(missing.map((key) => [key.name, indexedType(key.type)])),
    });
  } catch (error) {
    // Workers starting together race to register them: one that lost finds them there now.
    const { customAttributes: now } = await connection.operatorService.listSearchAttributes({ namespace });
    if (keys.every((key) => now?.[key.name] === indexedType(key.type))) return [];
    throw error;
  }
  return missing.map((key) => key.name);
}

/**
 * How long a server may take to use attributes just registered: temporal-server keeps the namespace's
 * (2 s) and the cluster's (60 s) search attributes in caches; the dev server reads them fresh.
 */
const USABLE_WITHIN_MS = 90_000;

/**
 * Waits until the frontend accepts a query over every attribute: a run started with one the server does
 * not know yet is refused ("no mapping defined for search attribute"), so a worker says it is ready only
 * once they are in use (one request when they are). Past the bound (0: one try), it goes on and warns.
 */
async function untilUsable(
  connection: Pick<NativeConnection, 'workflowService'> | Pick<Connection, 'workflowService'>,
  namespace: string,
  log: { info(message: string): void; warn(message: string): void },
  withinMs: number,
): Promise<void> {
  const query = Object.values(PATCHLOOP_SEARCH_ATTRIBUTES)
    .map((key) => (key.type === 'INT' ? `${key.name} = 0` : `${key.name} = ''`))
    .join(' AND ');
  const started = Date.now();
  let told = false;
  for (;;) {
    try {
      await connection.workflowService.countWorkflowExecutions({ namespace, query });
      if (told) log.info(`search attributes in use after ${Math.round((Date.now() - started) / 1000)} s`);
      return;
    } catch (error) {
      // Only an unknown attribute (INVALID_ARGUMENT) is worth waiting for; any other refusal stays.
      if ((error as { code?: unknown }).code !== 3) return;
      if (Date.now() - started >= withinMs) {
        log.warn(`the server does not use the new search attributes yet: ${(error as Error).message}`);
        return;
      }
      if (!told) log.info('waiting for the server to use the new search attributes (its caches refresh within 60 s)');
      told = true;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

function indexedType(type: string): number {
  return type === 'INT' ? IndexedValueType.INDEXED_VALUE_TYPE_INT : IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
}
