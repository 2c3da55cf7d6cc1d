/**
 * The management changes that /admin/v1 and the web console both make, each as one step: the
 * service's change, the reload that puts it in force on this node now (other nodes follow with
 * their poll), and its `admin_changed` audit event naming the actor. One place, so that the two
 * front ends cannot drift apart in what they reload or record.
 */
import type { EventBus } from '../events/events.js';
import type { OrganizationAdmin, OrganizationView } from './organizations.js';
import type { OrganizationMember } from '../stores/types.js';
import { type ChangeActor, emitAdminChange } from './audit.js';
import type { ClientAdmin, ClientView } from './clients.js';
import type { GrantAdmin } from './grants.js';
import type { KeyAdmin } from './keys.js';
import type { ManagedKind, ResourceAdmin, ResourceView } from './resources.js';
import type { SessionAdmin } from './sessions.js';
import type { DeliveryLogEntry } from '../stores/webhook-outbox.js';
import type { WebhookAdmin, WebhookView } from './webhooks.js';
import type { SamlServiceProviderAdmin, SamlServiceProviderView } from './saml-service-providers.js';

/** The services a change uses (the running node's `ctx.management`, and its event bus). */
export interface ChangeServices {
  clients: ClientAdmin;
  keys: KeyAdmin;
  sessions: SessionAdmin;
  grants: GrantAdmin;
  resources: ResourceAdmin;
  organizations: OrganizationAdmin;
  webhooks: WebhookAdmin;
  reloadClients(): Promise<void>;
  reloadKeys(): Promise<void>;
}

/** Who makes a change, and where (`/admin/v1`, `/admin`): for the audit event. */
export interface ChangeOrigin {
  events: EventBus;
  endpoint: string;
  actor: ChangeActor;
}

/**
 * Makes the management changes, each reloaded and audited. Errors are the services' (`AdminError`), and
 * nothing is audited then.
 */
export class AuditedChanges {
  constructor(
    private readonly services: ChangeServices,
    private readonly origin: ChangeOrigin,
  ) {}

  private audit(action: string, target: { type: string; id: string }, changes: Record<string, unknown> = {}): void {
    emitAdminChange(this.origin.events, this.origin.endpoint, this.origin.actor, action, target, changes);
  }

  /** `ClientAdmin.create`, strict; the event lists the new client's settings (never its secret). */
  async createClient(client: unknown): Promise<{ view: ClientView; secret?: string }> {
    const { clientId, secret } = await this.services.clients.create(client, { strict: true });
    await this.services.reloadClients();
    const view = await this.services.clients.get(clientId);
    this.audit('client.create', { type: 'client', id: clientId }, view.client);
    return { view, ...(secret === undefined ? {} : { secret }) };
  }

  /** `ClientAdmin.update`; the event lists the changed settings with their new values. */
  async updateClient(clientId: string, patch: unknown, ifMatch: string | undefined): Promise<ClientView> {
    const { view, changed } = await this.services.clients.update(clientId, patch, ifMatch);
    await this.services.reloadClients();
    this.audit(
      'client.update',
      { type: 'client', id: clientId },
      Object.fromEntries(changed.map((f) => [f, view.client[f] ?? null])),
    );
    return view;
  }

  /** `ClientAdmin.delete`, strict: a config-file client's id is refused even with a stored copy. */
  async deleteClient(clientId: string, ifMatch: string | undefined): Promise<void> {
    await this.services.clients.delete(clientId, { ifMatch, strict: true });
    await this.services.reloadClients();
    this.audit('client.delete', { type: 'client', id: clientId });
  }

  /** `ClientAdmin.rotateSecret`; the event names the rotation, never the secret. */
  async rotateClientSecret(
    clientId: string,
    graceSeconds: number,
    ifMatch: string | undefined,
  ): Promise<{ view: ClientView; secret: string }> {
    const rotated = await this.services.clients.rotateSecret(clientId, graceSeconds, ifMatch);
    await this.services.reloadClients();
    this.audit('client.rotate_secret', { type: 'client', id: clientId }, { clientSecrets: '(rotated)', graceSeconds });
    return rotated;
  }

  /** `KeyAdmin.rotate`: one event per key added. */
  async rotateKeys(alg?: string): Promise<{ kid: string; alg: string; activatesAt: number }[]> {
    const added = (await this.services.keys.rotate(alg)).map((k) => ({
      kid: k.kid,
      alg: k.alg,
      activatesAt: k.activatesAt,
    }));
    await this.services.reloadKeys();
    for (const k of added)
      this.audit('key.rotate', { type: 'key', id: k.kid }, { alg: k.alg, activatesAt: k.activatesAt });
    return added;
  }

  /** `KeyAdmin.retire`. */
  async retireKey(kid: string): Promise<void> {
    await this.services.keys.retire(kid);
    await this.services.reloadKeys();
    this.audit('key.retire', { type: 'key', id: kid });
  }

  /** `SessionAdmin.revoke`: one live session of a user ends (back-channel logout). */
  async revokeSession(subjectId: string, sid: string): Promise<void> {
    await this.services.sessions.revoke(subjectId, sid);
    this.audit('session.revoke', { type: 'session', id: sid }, { subject: subjectId });
  }

  /** `SessionAdmin.revokeAllOf`: every live session of a user ends. @returns how many. */
  async revokeAllSessions(subjectId: string): Promise<number> {
    const ended = await this.services.sessions.revokeAllOf(subjectId);
    this.audit('session.revoke_all', { type: 'user', id: subjectId }, { ended });
    return ended;
  }

  /** `GrantAdmin.revoke`: a user's consent and refresh token grants for one client. @returns how many. */
  async revokeGrants(subjectId: string, clientId: string): Promise<number> {
    const revoked = await this.services.grants.revoke(subjectId, clientId);
    this.audit('grant.revoke', { type: 'user', id: subjectId }, { clientId, revoked });
    return revoked;
  }

  /**
   * `ResourceAdmin.create` (the service reloads); the event lists the new item's settings, an
   * upstream provider's `clientSecret` only as `(set)`, never an API resource's secret.
   */
  async createResource(kind: ManagedKind, settings: unknown): Promise<{ view: ResourceView; secret?: string }> {
    const created = await this.services.resources.create(kind, settings);
    const hasClientSecret = typeof (settings as { clientSecret?: unknown } | null)?.clientSecret === 'string';
    this.audit(
      `${kind}.create`,
      { type: kind, id: String(created.view.settings.name) },
      { ...created.view.settings, ...(hasClientSecret ? { clientSecret: '(set)' } : {}) },
    );
    return created;
  }

  /** `ResourceAdmin.update`; the event lists the changed settings' new values, a `clientSecret` only as `(changed)`. */
  async updateResource(
    kind: ManagedKind,
    name: string,
    patch: unknown,
    ifMatch: string | undefined,
  ): Promise<ResourceView> {
    const { view, changed } = await this.services.resources.update(kind, name, patch, ifMatch);
    this.audit(
      `${kind}.update`,
      { type: kind, id: name },
      Object.fromEntries(changed.map((f) => [f, f === 'clientSecret' ? '(changed)' : (view.settings[f] ?? null)])),
    );
    return view;
  }

  /** `ResourceAdmin.delete`. */
  async deleteResource(kind: ManagedKind, name: string, ifMatch: string | undefined): Promise<void> {
    await this.services.resources.delete(kind, name, ifMatch);
    this.audit(`${kind}.delete`, { type: kind, id: name });
  }

  /** `ResourceAdmin.rotateSecret` of an API resource; the event names the rotation, never the secret. */
  async rotateResourceSecret(
    name: string,
    graceSeconds: number,
    ifMatch: string | undefined,
  ): Promise<{ view: ResourceView; secret: string }> {
    const rotated = await this.services.resources.rotateSecret(name, graceSeconds, ifMatch);
    this.audit(
      'api_resource.rotate_secret',
      { type: 'api_resource', id: name },
      { secrets: '(rotated)', graceSeconds },
    );
    return rotated;
  }

  /** `OrganizationAdmin.create` (the service reloads); the event lists the new organization, its id included. */
  async createOrganization(body: unknown): Promise<OrganizationView> {
    const view = await this.services.organizations.create(body);
    this.audit('organization.create', { type: 'organization', id: view.name }, organizationChanges(view));
    return view;
  }

  /** `OrganizationAdmin.update`; the event lists the changed settings with their new values. */
  async updateOrganization(name: string, patch: unknown, ifMatch: string | undefined): Promise<OrganizationView> {
    const { view, changed } = await this.services.organizations.update(name, patch, ifMatch);
    const settings = organizationChanges(view);
    this.audit(
      'organization.update',
      { type: 'organization', id: name },
      Object.fromEntries(changed.map((f) => [f, settings[f] ?? null])),
    );
    return view;
  }

  /** `OrganizationAdmin.delete`: the organization and its memberships go. */
  async deleteOrganization(name: string, ifMatch: string | undefined): Promise<void> {
    await this.services.organizations.delete(name, ifMatch);
    this.audit('organization.delete', { type: 'organization', id: name });
  }

  /** `OrganizationAdmin.putMember`; the event names the member and their roles. */
  async putOrganizationMember(
    name: string,
    subject: string,
    roles: unknown,
  ): Promise<{ member: OrganizationMember; added: boolean }> {
    const put = await this.services.organizations.putMember(name, subject, roles);
    this.audit(
      put.added ? 'organization.member_add' : 'organization.member_update',
      { type: 'organization', id: name },
      {
        subject,
        roles: put.member.roles,
      },
    );
    return put;
  }

  /** `OrganizationAdmin.updateMember` (a member's roles, never a new member); audited `organization.member_update`. */
  async updateOrganizationMember(name: string, subject: string, roles: unknown): Promise<OrganizationMember> {
    const member = await this.services.organizations.updateMember(name, subject, roles);
    this.audit('organization.member_update', { type: 'organization', id: name }, { subject, roles: member.roles });
    return member;
  }

  /**
   * `OrganizationAdmin.addMember`: audited `organization.member_add` when the member is new,
   * `organization.member_update` when roles were merged into an existing member's, else not at all.
   */
  async addOrganizationMember(
    name: string,
    subject: string,
    roles: readonly string[] = [],
  ): Promise<{ member: OrganizationMember; added: boolean }> {
    const add = await this.services.organizations.addMember(name, subject, roles);
    if (add.added || roles.length > 0)
      this.audit(
        add.added ? 'organization.member_add' : 'organization.member_update',
        { type: 'organization', id: name },
        { subject, roles: add.member.roles },
      );
    return add;
  }

  /** `OrganizationAdmin.removeMember`. */
  async removeOrganizationMember(name: string, subject: string): Promise<void> {
    await this.services.organizations.removeMember(name, subject);
    this.audit('organization.member_remove', { type: 'organization', id: name }, { subject });
  }
}

/**
 * The changes of webhooks (/admin/v1/webhooks), each audited `webhook.*`; a secret never appears
 * in an event (a generated or rotated one is named, not given).
 */
export class AuditedWebhookChanges {
  constructor(
    private readonly webhooks: WebhookAdmin,
    private readonly origin: ChangeOrigin,
  ) {}

  private audit(action: string, name: string, changes: Record<string, unknown> = {}): void {
    emitAdminChange(
      this.origin.events,
      this.origin.endpoint,
      this.origin.actor,
      action,
      { type: 'webhook', id: name },
      changes,
    );
  }

  /** `WebhookAdmin.create`; the event lists the settings and names the generated secret. */
  async create(body: unknown): Promise<{ view: WebhookView; secret: string }> {
    const created = await this.webhooks.create(body);
    const { view } = created;
    this.audit('webhook.create', view.name, { url: view.url, events: view.events, secret: '(generated)' });
    return created;
  }

  /** `WebhookAdmin.update`; the event lists the changed fields with their new values. */
  async update(name: string, patch: unknown, ifMatch: string): Promise<WebhookView> {
    const { view, changed } = await this.webhooks.update(name, patch, ifMatch);
    this.audit('webhook.update', name, Object.fromEntries(changed.map((f) => [f, view[f]])));
    return view;
  }

  /** `WebhookAdmin.delete`. */
  async delete(name: string, ifMatch: string | undefined): Promise<void> {
    await this.webhooks.delete(name, ifMatch);
    this.audit('webhook.delete', name);
  }

  /** `WebhookAdmin.rotateSecret`; the event names the rotation, never the secret. */
  async rotateSecret(
    name: string,
    graceSeconds: number,
    ifMatch: string | undefined,
  ): Promise<{ view: WebhookView; secret: string }> {
    const rotated = await this.webhooks.rotateSecret(name, graceSeconds, ifMatch);
    this.audit('webhook.rotate_secret', name, { secret: '(rotated)', graceSeconds });
    return rotated;
  }

  /** `WebhookAdmin.retry`. */
  async retry(name: string, id: string): Promise<DeliveryLogEntry> {
    const entry = await this.webhooks.retry(name, id);
    this.audit('webhook.retry', name, { delivery: id });
    return entry;
  }

  /** `WebhookAdmin.ping`. */
  async ping(name: string): Promise<DeliveryLogEntry> {
    const entry = await this.webhooks.ping(name);
    this.audit('webhook.ping', name, { delivery: entry.id });
    return entry;
  }
}

/**
 * The changes of SAML service providers (/admin/v1/saml-service-providers), each audited
 * `saml_service_provider.*` with the entity ID as its target; the metadata appears as `(set)` or
 * `(changed)`, never its text (up to 100,000 characters).
 */
export class AuditedSamlServiceProviderChanges {
  constructor(
    private readonly sps: SamlServiceProviderAdmin,
    private readonly origin: ChangeOrigin,
  ) {}

  private audit(action: string, entityId: string, changes: Record<string, unknown> = {}): void {
    emitAdminChange(
      this.origin.events,
      this.origin.endpoint,
      this.origin.actor,
      action,
      { type: 'saml_service_provider', id: entityId },
      changes,
    );
  }

  /** `SamlServiceProviderAdmin.create`; the event lists the settings. */
  async create(body: unknown): Promise<SamlServiceProviderView> {
    const view = await this.sps.create(body);
    const { etag: _etag, effective: _effective, source: _source, ...settings } = view;
    this.audit('saml_service_provider.create', view.entityId, spChanges(settings));
    return view;
  }

  /** `SamlServiceProviderAdmin.update`; the event lists the changed settings with their new values. */
  async update(entityId: string, patch: unknown, ifMatch: string): Promise<SamlServiceProviderView> {
    const { view, changed } = await this.sps.update(entityId, patch, ifMatch);
    const settings = view as unknown as Record<string, unknown>;
    this.audit(
      'saml_service_provider.update',
      entityId,
      spChanges(Object.fromEntries(changed.map((f) => [f, settings[f] ?? null])), '(changed)'),
    );
    return view;
  }

  /** `SamlServiceProviderAdmin.delete`. */
  async delete(entityId: string, ifMatch: string | undefined): Promise<void> {
    await this.sps.delete(entityId, ifMatch);
    this.audit('saml_service_provider.delete', entityId);
  }
}

/** An SP's settings as an audit event's changes: `metadataXml` named, not given. */
function spChanges(settings: Record<string, unknown>, mark = '(set)'): Record<string, unknown> {
  return 'metadataXml' in settings && settings.metadataXml != null ? { ...settings, metadataXml: mark } : settings;
}

/** An organization as an audit event's changes: every field but its ETag. */
function organizationChanges({ etag: _etag, ...organization }: OrganizationView): Record<string, unknown> {
  return organization;
}
