/**
 * Clients kept in the store (`sigil clients add`), read with the config file's client schema.
 * A stored client that no longer validates is skipped with a warning, never half-used.
 */
import type { Logger } from 'pino';
import { type ClientConfig, clientSchema } from '../config/schema.js';
import type { ClientStore } from './types.js';

/** The valid stored clients, defaults filled in. */
export async function loadStoredClients(store: ClientStore, log: Logger): Promise<ClientConfig[]> {
  const out: ClientConfig[] = [];
  for (const raw of await store.listClients()) {
    const parsed = clientSchema.safeParse(raw);
    if (parsed.success) out.push(parsed.data);
    else log.warn({ clientId: raw.clientId, problems: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) }, 'stored client ignored: invalid');
  }
  return out;
}
