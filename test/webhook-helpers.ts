/**
 * Fixtures of the webhook suites: a provider with a short delivery schedule and an admin client,
 * on SQLite or on a PostgreSQL schema of its own; the management API as that client; and waiting
 * for what a receiver gets.
 */
import type { ConfigInput } from '../src/index.js';
import {
  clientTokens,
  POSTGRES_URL,
  settled,
  startSigil,
  testConfig,
  type TestSigil,
  uniqueSchema,
} from './helpers.js';
import type { Receiver } from './webhook-receiver.js';

/** A fixed Standard Webhooks secret for config-file webhooks (32 bytes). */
export const CONFIG_SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

/** A delivery schedule short enough for a test: retries after 1 s, then 2 s at most; 2 s timeout. */
export const SHORT_DELIVERY = { timeoutSeconds: 2, firstRetrySeconds: 1, maxRetrySeconds: 2, pollSeconds: 1 };

/** The dialects the suites run on, with the storage URL of a fresh store. */
export const DIALECTS: [string, () => string | undefined][] = [
  ['SQLite', () => undefined],
  ['PostgreSQL', () => `${POSTGRES_URL}?schema=${uniqueSchema('webhooks')}`],
];

/** The admin client every suite adds. */
export const ADMIN_CLIENT = {
  clientId: 'automation',
  clientSecrets: ['automation-secret'],
  allowedGrantTypes: ['client_credentials'],
  allowedScopes: ['sigil:admin'],
};

/** A client that may only read the management API. */
export const READER_CLIENT = {
  clientId: 'auditor',
  clientSecrets: ['auditor-secret'],
  allowedGrantTypes: ['client_credentials'],
  allowedScopes: ['sigil:admin:read'],
};

/** A provider on `storage` (default: a SQLite file) with the shared clients, an admin client and `overrides`. */
export async function startWebhookSigil(
  storage: string | undefined,
  overrides: Partial<ConfigInput> = {},
): Promise<{ sigil: TestSigil; api: Api }> {
  const base = testConfig();
  const sigil = await startSigil({
    ...(storage ? { storage } : {}),
    clients: [...(base.clients ?? []), ADMIN_CLIENT, READER_CLIENT],
    webhookDelivery: SHORT_DELIVERY,
    ...overrides,
  });
  const token = (await clientTokens(sigil, 'sigil:admin', ['automation', 'automation-secret'])).access_token;
  return { sigil, api: adminApi(sigil, token) };
}

/** An answer of the management API. */
export interface ApiAnswer {
  status: number;
  body: Record<string, unknown>;
  etag: string | undefined;
  text: string;
}

/** Calls the management API with the admin token. */
export type Api = (method: string, url: string, body?: unknown, headers?: Record<string, string>) => Promise<ApiAnswer>;

/** The management API of `sigil` as the bearer of `token`. */
export function adminApi(sigil: TestSigil, token: string): Api {
  return async (method, url, body, headers = {}) => {
    const res = await sigil.app.inject({
      method: method as 'GET',
      url: `/admin/v1${url}`,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined
          ? {}
          : { 'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
    const etag = res.headers.etag;
    return {
      status: res.statusCode,
      body: res.body ? (JSON.parse(res.body) as Record<string, unknown>) : {},
      etag: typeof etag === 'string' ? etag : undefined,
      text: res.body,
    };
  };
}

/** Waits (up to `ms`) until the receiver verified a delivery of each of `types`; returns the verified bodies. */
export async function receivedTypes(receiver: Receiver, types: string[], ms = 15_000) {
  return settled(
    async () => receiver.verified(),
    (got) => types.every((t) => got.some((b) => b.type === t)),
    ms,
  );
}
