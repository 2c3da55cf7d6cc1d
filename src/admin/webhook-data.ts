/**
 * The webhook events of the management services (DESIGN §6b "Webhooks and hooks"): what `data`
 * says of a user, a client or a membership, in one place, and which events a change makes. The
 * services hand them to the store, which writes them to the outbox in the change's transaction.
 * Never in `data`: a password or its hash, a client secret or its digest, a token, a code; a
 * client is told by an allow-list of its settings, so a setting added later stays out until named
 * here.
 */
import { clientOrderKey, userOrderKey, type WebhookEvent, type WebhookEventType } from '../events/webhook-events.js';
import type { DirectoryUser, UserWrite } from '../stores/directory.js';

/** A user as `user.created` and `user.updated` tell of them. */
function userData(subject: string, user: UserWrite, tenant: string | null): Record<string, unknown> {
  return {
    subject,
    username: user.username,
    tenant,
    externalId: user.externalId,
    active: user.isActive,
    emails: user.emails.map((e) => ({ value: e.value, type: e.type, primary: e.primary, verified: e.verified })),
    claims: user.claims,
  };
}

/** `user.created` for a user stored with `write`, and `organization.member_added` when they join one with it. */
export function userCreated(subject: string, write: UserWrite, organizationId?: string): WebhookEvent[] {
  const created: WebhookEvent = {
    type: 'user.created',
    orderKey: userOrderKey(subject),
    data: userData(subject, write, write.tenant ?? null),
  };
  return organizationId === undefined
    ? [created]
    : [created, memberEvent('organization.member_added', organizationId, subject, [])];
}

/**
 * The events of a change written over `before`: `user.password_changed` when a password was set,
 * `user.updated` (with the names of what changed) when anything else changed.
 */
export function userChanged(before: DirectoryUser, write: UserWrite): WebhookEvent[] {
  const subject = before.subjectId;
  const events: WebhookEvent[] = [];
  if (write.passwordHash !== undefined)
    events.push({ type: 'user.password_changed', orderKey: userOrderKey(subject), data: { subject } });
  const changed = [
    ...(write.username !== before.username ? ['username'] : []),
    ...(write.externalId !== before.externalId ? ['externalId'] : []),
    ...(write.isActive !== before.isActive ? ['active'] : []),
    ...(JSON.stringify(write.emails) !== JSON.stringify(before.emails) ? ['emails'] : []),
    ...(JSON.stringify(write.claims) !== JSON.stringify(before.claims) ? ['claims'] : []),
  ];
  if (changed.length > 0)
    events.push({
      type: 'user.updated',
      orderKey: userOrderKey(subject),
      data: { ...userData(subject, write, before.tenant === '' ? null : before.tenant), changed },
    });
  return events;
}

/** `user.deleted`. */
export function userDeleted(subject: string, username: string): WebhookEvent[] {
  return [{ type: 'user.deleted', orderKey: userOrderKey(subject), data: { subject, username } }];
}

/** The settings of a client that its events tell (no secret, digest or key among them). */
const CLIENT_FIELDS = [
  'clientName',
  'allowedGrantTypes',
  'allowedScopes',
  'redirectUris',
  'postLogoutRedirectUris',
  'requireClientSecret',
  'registeredDynamically',
] as const;

/**
 * A client event: `client.created`, `client.updated` (with the names of the settings that changed,
 * a rotated secret named `clientSecrets`, never given) or `client.deleted` (its id only).
 */
export function clientEvent(
  type: Extract<WebhookEventType, `client.${string}`>,
  clientId: string,
  config: Record<string, unknown> = {},
  changed?: readonly string[],
): WebhookEvent[] {
  const settings =
    type === 'client.deleted'
      ? {}
      : Object.fromEntries(CLIENT_FIELDS.filter((f) => f in config).map((f) => [f, config[f]]));
  return [
    {
      type,
      orderKey: clientOrderKey(clientId),
      data: { clientId, ...settings, ...(changed === undefined ? {} : { changed }) },
    },
  ];
}

/** `organization.member_added` or `organization.member_removed`: the organization's id, the member and their roles. */
export function memberEvent(
  type: 'organization.member_added' | 'organization.member_removed',
  organizationId: string,
  subject: string,
  roles: readonly string[],
): WebhookEvent {
  return {
    type,
    orderKey: userOrderKey(subject),
    data: { organizationId, subject, ...(type === 'organization.member_added' ? { roles } : {}) },
  };
}
