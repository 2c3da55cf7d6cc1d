/**
 * Invitations to join an organization: an admin invites an address with roles
 * (`POST /admin/v1/organizations/{name}/invitations`), Sigil mails a single-use link
 * `<issuer>/account/invitations/<token>`, and the signed-in user who follows it and accepts becomes
 * a member with those roles (`OrganizationAdmin.addMember`: roles merged into any they hold).
 *
 * - The token is a random handle stored as its SHA-256 only (`records/organization-invitations.ts`);
 *   the management API shows an invitation's id, never its token.
 * - An invitation lives INVITATION_SECONDS (7 days, Auth0's default): long enough for someone to
 *   read their mail and create an account, short enough that a forgotten link, a bearer
 *   credential, does not outlive the invitation's purpose.
 * - At most MAX_PENDING_INVITATIONS pending per organization, so an admin token cannot fill the
 *   store or turn Sigil into a mass mailer.
 * - Who may accept: only a user who holds the invited address, confirmed. The link alone is not
 *   enough, since a mail is forwarded, read over a shoulder or leaked in a proxy's log, and the
 *   roles it grants are the organization's (Auth0 likewise asks the invitee to sign in with the
 *   invited address). Another user gets a page saying so; the invitation stays usable.
 */
import { OAuthError } from '../protocol/errors.js';
import { chargeQuota } from '../limits/request-quota.js';
import type { FailureLimiter } from '../limits/failure-limiter.js';
import { normalizeDomain } from '../config/schema.js';
import type { Logger } from 'pino';
import { newHandle, newId, nowSeconds } from '../crypto/handles.js';
import type { EventBus } from '../events/events.js';
import type { GrantRecord } from '../stores/grant-store.js';
import type { InvitationData } from '../stores/records/organization-invitations.js';
import { normalizeEmail } from '../stores/user-emails.js';
import type { Store } from '../stores/types.js';
import { isEmailAddress } from '../users/email-address.js';
import { type ChangeActor, emitAdminChange } from '../admin/audit.js';
import { AuditedChanges, type ChangeServices } from '../admin/audited-changes.js';
import { AdminError, invalidField } from '../admin/errors.js';
import { parseRoles } from '../admin/organization-members.js';
import type { Mailer } from './mailer.js';

/** How long an invitation link works, seconds (7 days). */
export const INVITATION_SECONDS = 7 * 86_400;
/** The most pending invitations of one organization. */
export const MAX_PENDING_INVITATIONS = 100;
/** The most invitations one organization may send in 24 hours, whatever became of them. */
export const MAX_INVITATIONS_PER_DAY = 200;
/** The longest invited address, characters (RFC 5321 §4.5.3.1.3's path). */
export const MAX_INVITED_EMAIL = 254;

/** An invitation as the management API shows it (never its token). */
export interface InvitationView {
  id: string;
  email: string;
  roles: string[];
  /** Unix seconds. */
  createdAt: number;
  expiresAt: number;
}

/** What a live invitation's page shows. */
export interface InvitationPreview {
  /** The organization's name and display name. */
  organization: string;
  displayName: string;
  email: string;
}

/** The outcome of accepting: `invalid` for a link that is not live (used, revoked, expired, unknown). */
export type AcceptOutcome =
  | { ok: true; organization: string; displayName: string; roles: string[] }
  | { ok: false; reason: 'invalid' | 'wrong_user' };

/** Creates, lists, revokes and accepts the invitations of organizations. */
export class OrganizationInvitations {
  constructor(
    private readonly deps: {
      store: Pick<Store, 'records' | 'emails'>;
      /** The management services a membership change goes through (audited like the admin API's). */
      management: ChangeServices;
      events: EventBus;
      /** Absent without config `email`: no invitation can be sent then. */
      mailer: Mailer | undefined;
      issuer: string;
      log: Pick<Logger, 'warn'>;
      /** Whose counters hold each organization's invitations of the day, for the whole deployment. */
      limiter: FailureLimiter;
    },
  ) {}

  /**
   * Invites `body.email` to organization `name` with `body.roles`, and mails the link (in `lang`).
   * Audited `organization.invitation_create` (address and roles, never the token).
   * @throws AdminError `not_found` (no such organization), `invalid` (email, roles; an address outside
   *   the domains of an organization of `domain` membership), `conflict`
   *   (mail is not configured; MAX_PENDING_INVITATIONS pending); OAuthError 429
   *   `temporarily_unavailable` with Retry-After past MAX_INVITATIONS_PER_DAY in 24 hours; OAuthError 503
   *   `temporarily_unavailable` when the SMTP server refuses or cannot be reached (the invitation is
   *   revoked then).
   */
  async invite(
    name: string,
    body: { email: string; roles: readonly string[] },
    actor: ChangeActor,
    endpoint: string,
    lang = 'en',
  ): Promise<InvitationView> {
    const mailer = this.deps.mailer;
    // 409 rather than 503: a setting of this server, which no retry changes (as a config-file item's 409).
    if (!mailer) throw new AdminError('conflict', 'mail is not configured: set config "email" to send invitations');
    const email = body.email.trim();
    if (email.length > MAX_INVITED_EMAIL || !isEmailAddress(email)) throw invalidField('email', 'not an email address');
    const roles = parseRoles(body.roles);
    const org = await this.deps.management.organizations.get(name);
    // The membership policy says who belongs: an organization of `domain` membership is its domains'
    // people, so an address elsewhere is refused (a guest is made a member directly by a full
    // admin); `invite` and `open` organizations may invite any address (guests, contractors).
    const domain = normalizeDomain(email.slice(email.lastIndexOf('@') + 1));
    if (org.membership === 'domain' && (domain === undefined || !org.domains.includes(domain)))
      throw invalidField('email', `organization "${name}" admits members of its domains only (membership "domain")`);
    // Revoking keeps the pending ones under their cap, so the day's count is what stops an
    // organization's admin from making Sigil's mail server send for them without end.
    await chargeQuota(
      this.deps.limiter,
      'email_quota',
      [{ key: `invitation:${org.id}`, limit: MAX_INVITATIONS_PER_DAY }],
      86_400,
    );
    const now = nowSeconds();
    const pending = await this.deps.store.records.invitations.pending(org.id, now, MAX_PENDING_INVITATIONS);
    if (pending.length >= MAX_PENDING_INVITATIONS)
      throw new AdminError(
        'conflict',
        `organization "${name}" has ${MAX_PENDING_INVITATIONS} pending invitations: revoke some first`,
      );
    const token = newHandle();
    const data: InvitationData = { id: newId(), organizationId: org.id, organization: name, email, roles };
    await this.deps.store.records.invitations.issue(token, data, now, INVITATION_SECONDS);
    try {
      await mailer.send({
        to: email,
        kind: 'invitation',
        lang,
        link: `${this.deps.issuer}/account/invitations/${encodeURIComponent(token)}`,
        values: { organization: org.displayName },
      });
    } catch (err) {
      const stored = await this.deps.store.records.invitations.findLive(token, now);
      if (stored) await this.deps.store.records.invitations.revoke(stored, nowSeconds());
      // The caller gets a 503 it may retry, never a 500; the log keeps the SMTP server's reason.
      this.deps.log.warn({ err, organization: name }, 'organization invitation: the mail could not be sent');
      throw new OAuthError(
        'temporarily_unavailable',
        'the invitation mail could not be sent; nothing was kept, try again later',
        503,
      );
    }
    emitAdminChange(this.deps.events, endpoint, actor, 'organization.invitation_create', target(name), {
      id: data.id,
      email,
      roles,
    });
    return view({ data, createdAt: now, expiresAt: now + INVITATION_SECONDS });
  }

  /**
   * The pending invitations of organization `name`, newest first.
   * @throws AdminError `not_found`.
   */
  async pending(name: string): Promise<InvitationView[]> {
    const org = await this.deps.management.organizations.get(name);
    return (await this.deps.store.records.invitations.pending(org.id, nowSeconds(), MAX_PENDING_INVITATIONS)).map(view);
  }

  /**
   * Revokes a pending invitation by its id: its link no longer works. Audited
   * `organization.invitation_revoke`.
   * @throws AdminError `not_found` (no such organization, or no pending invitation of that id).
   */
  async revoke(name: string, id: string, actor: ChangeActor, endpoint: string): Promise<void> {
    const org = await this.deps.management.organizations.get(name);
    const now = nowSeconds();
    const pending = await this.deps.store.records.invitations.pending(org.id, now, MAX_PENDING_INVITATIONS);
    const record = pending.find((r) => r.data.id === id);
    if (!record) throw new AdminError('not_found', `no pending invitation "${id}" of organization "${name}"`);
    await this.deps.store.records.invitations.revoke(record, now);
    emitAdminChange(this.deps.events, endpoint, actor, 'organization.invitation_revoke', target(name), { id });
  }

  /** What the page of a live invitation shows, or undefined (not live, or its organization gone). */
  async preview(token: string): Promise<InvitationPreview | undefined> {
    const record = await this.deps.store.records.invitations.findLive(token, nowSeconds());
    if (!record) return undefined;
    const displayName = await this.displayName(record.data);
    return displayName === undefined
      ? undefined
      : { organization: record.data.organization, displayName, email: record.data.email };
  }

  /**
   * Accepts an invitation for the signed-in user `subject`: they must hold the invited address,
   * confirmed (see above), else `wrong_user` and the invitation stays. Then it is consumed, once,
   * atomically, and they become a member with its roles merged into any they hold, audited
   * `organization.member_add` (or `member_update`) with the user as the actor.
   * @throws DirectoryUnavailable when a user directory cannot say whether it holds the subject.
   */
  async accept(token: string, subject: string, endpoint: string): Promise<AcceptOutcome> {
    const now = nowSeconds();
    const record = await this.deps.store.records.invitations.findLive(token, now);
    if (!record) return { ok: false, reason: 'invalid' };
    const displayName = await this.displayName(record.data);
    if (displayName === undefined) return { ok: false, reason: 'invalid' };
    const invited = normalizeEmail(record.data.email);
    const held = (await this.deps.store.emails.findByValue(record.data.email)).some(
      (e) => e.subjectId === subject && e.verified && normalizeEmail(e.value) === invited,
    );
    if (!held) return { ok: false, reason: 'wrong_user' };
    if (!(await this.deps.store.records.invitations.consume(token, now))) return { ok: false, reason: 'invalid' };
    const changes = new AuditedChanges(this.deps.management, {
      events: this.deps.events,
      endpoint,
      actor: { clientId: '', sub: subject },
    });
    try {
      const { member } = await changes.addOrganizationMember(record.data.organization, subject, record.data.roles);
      return { ok: true, organization: record.data.organization, displayName, roles: member.roles };
    } catch (err) {
      // The organization or the user went between the reads and the write.
      if (err instanceof AdminError && err.code === 'not_found') return { ok: false, reason: 'invalid' };
      throw err;
    }
  }

  /** The display name of the invitation's organization, when it still exists under that name and id. */
  private async displayName(data: InvitationData): Promise<string | undefined> {
    try {
      const org = await this.deps.management.organizations.get(data.organization);
      return org.id === data.organizationId ? org.displayName : undefined;
    } catch (err) {
      if (err instanceof AdminError && err.code === 'not_found') return undefined;
      throw err;
    }
  }
}

function target(name: string): { type: string; id: string } {
  return { type: 'organization', id: name };
}

function view({
  data,
  createdAt,
  expiresAt,
}: Pick<GrantRecord<InvitationData>, 'data' | 'createdAt' | 'expiresAt'>): InvitationView {
  return { id: data.id, email: data.email, roles: data.roles, createdAt, expiresAt };
}
