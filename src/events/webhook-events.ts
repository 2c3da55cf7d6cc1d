/**
 * The catalogue of webhook events (DESIGN §6b "Webhooks and hooks"): their names, and the event
 * every writer hands the outbox. A webhook receives a body `{ "type", "timestamp", "data" }`,
 * signed as Standard Webhooks says; `data` never holds a secret, password, hash, token or code.
 * The writers are the management services (users, clients, organization members), the end of a
 * session (the logout store's transaction) and, after their outcome, the sign-in and consent
 * events of the `EventBus` (`webhooks/audit-events.ts`).
 */

/** The event names a webhook may subscribe to (`events`), or `*` for all of them. */
export const WEBHOOK_EVENT_TYPES = [
  'user.created',
  'user.updated',
  'user.deleted',
  'user.signed_in',
  'user.sign_in_failed',
  'user.password_changed',
  'user.mfa_enrolled',
  'session.ended',
  'client.created',
  'client.updated',
  'client.deleted',
  'consent.granted',
  'consent.revoked',
  'organization.member_added',
  'organization.member_removed',
] as const;

/** A webhook event's name. */
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** The type of the test event `POST /admin/v1/webhooks/{name}/ping` sends to one webhook (no subscription needed). */
export const PING_EVENT = 'webhook.ping';

/**
 * One event for the outbox: it becomes one delivery per webhook subscribed to its type, each
 * delivered after the deliveries of the same `orderKey` written before it (order per subject).
 */
export interface WebhookEvent {
  type: WebhookEventType;
  /**
   * What the event is about, for the order of deliveries: `user:<sub>` for users, their sessions,
   * consents and memberships; `client:<client_id>` for clients.
   */
  orderKey: string;
  /** The body's `data`: JSON, never a secret, password, hash, token or code. */
  data: Record<string, unknown>;
}

/** The order key of what happens to the user `subject`. */
export function userOrderKey(subject: string): string {
  return `user:${subject}`;
}

/** The order key of what happens to the client `clientId`. */
export function clientOrderKey(clientId: string): string {
  return `client:${clientId}`;
}
