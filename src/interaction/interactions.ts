/**
 * Pending authorization requests waiting for the login or consent page. Each is stored under the
 * SHA-256 of a random id, bound to the browser that started it (SES-05), and lives 10 minutes.
 * Pages carry only the id, never a return URL, so there is nothing to redirect openly to.
 */
import type { SigilContext } from '../context.js';
import type { GrantStore } from '../stores/types.js';
import { addressQuotaKey, takeQuota } from '../limits/request-quota.js';
import { hashHandle, newHandle, nowSeconds } from '../crypto/handles.js';
import { newGrantRecord } from '../stores/types.js';

/** How long a pending request waits for the user, in seconds. */
export const INTERACTION_LIFETIME = 600;

/**
 * Counts a new pending request against its browser's and its address's quota (config
 * `pendingLimits`: `interactionsPerBrowser`, `interactionsPerAddress` per `windowSeconds`). Call it
 * before `Interactions.create` for a request that no one has authenticated yet.
 * @param browser the browser id's hash (`SessionService.browserId`)
 * @param ip the request's address
 * @throws OAuthError 429 `temporarily_unavailable` with `Retry-After` when over either limit.
 */
export async function takeInteractionQuota(ctx: SigilContext, browser: string, ip: string): Promise<void> {
  const limits = ctx.config.pendingLimits;
  await takeQuota(
    ctx.limiter.counters,
    [
      { key: `interaction:browser:${browser}`, limit: limits.interactionsPerBrowser },
      { key: `interaction:address:${addressQuotaKey(ip)}`, limit: limits.interactionsPerAddress },
    ],
    limits.windowSeconds,
  );
}

/** A pending authorization request. */
export interface Interaction {
  /** The validated request's parameters, re-validated on resume. */
  params: Record<string, string>;
  /** SHA-256 of the browser id that started it. */
  browser: string;
  /** Unix seconds of a login done for this request (prompt=login and max_age are then met). */
  loginAt?: number;
  /** Scopes the user consented to for this request. */
  consented?: string[];
  /** Set when the request is a device's (RFC 8628 §3.3): the device code and user code rows. */
  device?: { deviceKey: string; userCodeKey: string };
}

/** Where a pending request continues after the login or consent page. */
export function resumePath(id: string, interaction: Interaction): string {
  const base = interaction.device ? '/device/resume' : '/connect/authorize/resume';
  return `${base}?interaction=${encodeURIComponent(id)}`;
}

/** Stores, reads and updates pending requests. */
export class Interactions {
  constructor(private readonly grants: GrantStore) {}

  /** Stores a new pending request; returns its id. */
  async create(clientId: string, interaction: Interaction): Promise<string> {
    const id = newHandle();
    const now = nowSeconds();
    await this.grants.put(newGrantRecord({
      key: hashHandle(id),
      type: 'interaction',
      clientId,
      data: { ...interaction },
      createdAt: now,
      expiresAt: now + INTERACTION_LIFETIME,
    }));
    return id;
  }

  /** The live pending request `id` of this browser, or undefined. */
  async get(id: string | undefined, browser: string): Promise<Interaction | undefined> {
    if (!id || id.length > 100) return undefined;
    const row = await this.grants.get(hashHandle(id));
    if (!row || row.type !== 'interaction' || row.revokedAt !== null || row.consumedAt !== null) return undefined;
    if (row.expiresAt <= nowSeconds()) return undefined;
    const data = row.data as unknown as Interaction;
    return data.browser === browser ? data : undefined;
  }

  /** Saves changes to a pending request. */
  async update(id: string, interaction: Interaction): Promise<void> {
    await this.grants.update(hashHandle(id), { ...interaction }, nowSeconds() + INTERACTION_LIFETIME);
  }

  /** Ends a pending request once answered; returns false when it was already answered. */
  async finish(id: string): Promise<boolean> {
    return this.grants.consume(hashHandle(id), nowSeconds());
  }
}
