/**
 * The webhook events that follow an outcome rather than a transaction of the store (DESIGN §6b
 * "Webhooks and hooks"): a sign-in's success or failure, a second factor enrolled, a consent given
 * or withdrawn. Their writers emit audit events on the `EventBus`; this subscriber turns each into
 * its webhook event and writes it to the outbox right after (`SqlWebhookOutbox.record`), so the
 * signing-in code knows nothing of webhooks. Such an event can be lost if the process dies between
 * the outcome and this write; the changes of the management services, the users' and clients'
 * lifecycle and the end of sessions are written in their own transactions instead.
 * Only names and ids go into `data`: never the username a failed sign-in typed (it may be a
 * password typed in the wrong field), never a secret, token or code.
 */
import type { SigilEvent } from '../events/events.js';
import { userOrderKey, type WebhookEvent } from '../events/webhook-events.js';
import { newId } from '../crypto/handles.js';

/** The webhook events an audit event stands for (none for most). */
export function webhookEventsOf(event: SigilEvent): WebhookEvent[] {
  const subject = event.subjectId;
  const client = event.clientId === undefined ? {} : { clientId: event.clientId };
  switch (event.name) {
    case 'user_login_succeeded':
      if (subject === undefined) return [];
      return [
        { type: 'user.signed_in', orderKey: userOrderKey(subject), data: { subject, method: event.method, ...client } },
      ];
    case 'user_login_failed':
      return [
        {
          type: 'user.sign_in_failed',
          // A failure naming no user follows no one's order.
          orderKey: subject === undefined ? `anonymous:${newId()}` : userOrderKey(subject),
          data: {
            ...(subject === undefined ? {} : { subject }),
            method: event.method,
            ...client,
            ...(event.errorDescription === undefined ? {} : { reason: event.errorDescription }),
          },
        },
      ];
    case 'mfa_enrolled':
    case 'webauthn_registered':
      if (subject === undefined) return [];
      return [{ type: 'user.mfa_enrolled', orderKey: userOrderKey(subject), data: { subject, factor: event.factor } }];
    case 'consent_granted':
      if (subject === undefined) return [];
      return [
        {
          type: 'consent.granted',
          orderKey: userOrderKey(subject),
          data: { subject, ...client, scopes: event.scopes ?? [], remembered: event.remembered === true },
        },
      ];
    case 'grants_revoked':
      if (subject === undefined) return [];
      return [{ type: 'consent.revoked', orderKey: userOrderKey(subject), data: { subject, ...client } }];
    case 'admin_changed':
      return adminChange(event);
    default:
      return [];
  }
}

/** An admin's withdrawal of a user's consent (`grant.revoke` of `/admin/v1` and the console). */
function adminChange(event: SigilEvent): WebhookEvent[] {
  if (event.action !== 'grant.revoke' || event.target === undefined) return [];
  const subject = event.target.id;
  const clientId = event.changes?.clientId;
  return [
    {
      type: 'consent.revoked',
      orderKey: userOrderKey(subject),
      data: { subject, ...(typeof clientId === 'string' ? { clientId } : {}) },
    },
  ];
}
