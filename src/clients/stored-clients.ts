/**
 * Clients kept in the store (`sigil clients add`), read with the config file's client schema.
 * A stored client that no longer validates, or whose id is a user's subject, is skipped with a
 * warning, never half-used.
 */
import type { Logger } from 'pino';
import { type ClientConfig, clientSchema, clientSubjectCollision } from '../config/schema.js';
import type { ClientStore, UserStore } from '../stores/types.js';

/**
 * A secret replaced by `ClientAdmin.rotateSecret`, still accepted until `expiresAt` (Unix
 * seconds): its `sha256:` digest.
 */
export interface RetiringSecret {
  secret: string;
  expiresAt: number;
}

/** A stored client: its config-file settings and the secrets being retired. */
export type StoredClientConfig = ClientConfig & { retiringSecrets?: RetiringSecret[] };

/**
 * Splits a stored client's saved object into its config-file settings and the retiring secrets
 * kept beside them (the one field a stored client has that a config-file client has not).
 */
export function splitStoredClient(raw: Record<string, unknown>): {
  config: Record<string, unknown>;
  retiringSecrets: RetiringSecret[];
} {
  const { retiringSecrets, ...config } = raw;
  const list = Array.isArray(retiringSecrets)
    ? retiringSecrets.filter(
        (r): r is RetiringSecret => typeof r?.secret === 'string' && typeof r?.expiresAt === 'number',
      )
    : [];
  return { config, retiringSecrets: list };
}

/**
 * The valid stored clients, defaults filled in. `isUserSubject` tells whether an id is a user's
 * subject (config or stored): such a client is skipped, as its own tokens would carry that
 * user's `sub` (RFC 9068 §5).
 */
export async function loadStoredClients(
  store: ClientStore,
  log: Logger,
  isUserSubject: (id: string) => Promise<boolean> = async () => false,
): Promise<StoredClientConfig[]> {
  const out: StoredClientConfig[] = [];
  for (const saved of await store.listClients()) {
    const { config: raw, retiringSecrets } = splitStoredClient(saved);
    const parsed = clientSchema.safeParse(raw);
    if (!parsed.success)
      log.warn(
        { clientId: raw.clientId, problems: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) },
        'stored client ignored: invalid',
      );
    else if (await isUserSubject(parsed.data.clientId))
      log.warn(
        { clientId: parsed.data.clientId },
        'stored client ignored: its clientId is the subject of a user (RFC 9068 §5)',
      );
    else out.push(retiringSecrets.length > 0 ? { ...parsed.data, retiringSecrets } : parsed.data);
  }
  return out;
}

/**
 * Config-file clients whose id is the subject of a stored user (RFC 9068 §5), as config problems
 * (`clients[1].clientId: ...`); empty when there is none.
 */
export async function clientsNamingStoredUsers(clients: readonly ClientConfig[], users: UserStore): Promise<string[]> {
  const problems: string[] = [];
  for (const [i, c] of clients.entries()) {
    const user = await users.findUserBySubject(c.clientId);
    if (user)
      problems.push(`clients[${i}].clientId: ${clientSubjectCollision(c.clientId, `stored user "${user.username}"`)}`);
  }
  return problems;
}
