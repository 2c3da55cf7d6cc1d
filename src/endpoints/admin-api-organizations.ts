/**
 * The organizations of the management API (/admin/v1/organizations, `admin-api.ts`): list, read,
 * create, change by a JSON Merge Patch (RFC 7396) with `If-Match`, delete; and the members of an
 * organization: list (a page at a time), put (`{"roles": [...]}`), remove; and its invitations by
 * mail: list the pending ones, invite (`{"email", "roles"}`), revoke. The routes of members and
 * invitations are open to an organization's admins too (`sigil:org:admin`, `organizationAdmin`),
 * who change the roles of members but add none (they invite) and leave their own membership alone.
 * Thin routes over `OrganizationAdmin`, which holds the rules (config-file organizations read-only
 * but for their members, a domain of one organization at most, members that are users); every
 * change goes through `AuditedChanges`, which records its `admin_changed` event.
 */
import { z } from 'zod';
import {
  MAX_ORGANIZATION_NAME,
  MAX_SUBJECT_LENGTH,
  MEMBERSHIP_KINDS,
  organization as organizationSchema,
} from '../config/schema.js';
import type { OrganizationView } from '../admin/organizations.js';
import { memberRoles, refuseOwnMembership } from '../admin/organization-members.js';
import { MAX_INVITED_EMAIL } from '../email/organization-invitations.js';
import {
  ADMIN_API_PATH,
  type Answer,
  changes,
  ifMatch,
  requiredIfMatch,
  MERGE_PATCH,
  name,
  parsed,
  paging,
  type Route,
} from './admin-api-kit.js';

const organizationName = name(MAX_ORGANIZATION_NAME).meta({ description: "The organization's name" });
const subject = name(MAX_SUBJECT_LENGTH).meta({ description: "The member's subject (sub)" });

const organizationOut = z.object({
  id: z.string().meta({ description: 'The stable id (org_id tokens carry): never the name, never changes' }),
  name: z.string(),
  displayName: z.string(),
  domains: z.array(z.string()),
  identityProviders: z.array(z.string()),
  membership: z.enum(MEMBERSHIP_KINDS),
  source: z
    .enum(['config', 'store'])
    .meta({ description: "config: the config file's, read-only (its members are not); store: managed here" }),
});
const oneOrganization = z.object({ organization: organizationOut });
const memberOut = z.object({ subject: z.string(), roles: z.array(z.string()) });
const memberBody = z.strictObject({ roles: memberRoles.default([]) });
const membersQuery = z.strictObject(paging('Members'));
const invitationBody = z.strictObject({
  email: z.string().min(1).max(MAX_INVITED_EMAIL).meta({ description: 'The address the link is mailed to' }),
  roles: memberRoles.default([]),
});
const invitationOut = z.object({
  id: z.string().meta({ description: "The id to revoke it by (never the link's token)" }),
  email: z.string(),
  roles: z.array(z.string()),
  createdAt: z.number().meta({ description: 'Unix seconds' }),
  expiresAt: z.number().meta({ description: 'Unix seconds: the link works until then, once' }),
});
const invitationId = name(64).meta({ description: "The invitation's id" });

/** An organization's answer: the item under `organization`, its ETag in the header. */
function organizationAnswer(view: OrganizationView, status = 200): Answer {
  const { etag, ...organization } = view;
  return { status, etag, body: { organization } };
}

/** The routes of /admin/v1/organizations. */
export const ORGANIZATION_ROUTES: Route[] = [
  {
    method: 'GET',
    url: '/organizations',
    summary: "Every organization: the config file's (read-only) and the stored ones",
    response: z.object({ organizations: z.array(organizationOut) }),
    handle: async (ctx) => ({
      status: 200,
      body: { organizations: (await ctx.management.organizations.list()).map(({ etag: _etag, ...o }) => o) },
    }),
  },
  {
    method: 'POST',
    url: '/organizations',
    summary: "Create a stored organization with a new stable id; 409 for a name or domain that is another's",
    created: true,
    body: organizationSchema,
    response: oneOrganization,
    handle: async (ctx, caller, _p, body) =>
      organizationAnswer(await changes(ctx, caller).createOrganization(body), 201),
  },
  {
    method: 'GET',
    url: '/organizations/:name',
    summary: 'One organization, config-file or stored',
    params: { name: organizationName },
    response: oneOrganization,
    handle: async (ctx, _c, p) => organizationAnswer(await ctx.management.organizations.get(p.name ?? '')),
  },
  {
    method: 'PATCH',
    url: '/organizations/:name',
    summary: 'Change a stored organization by a JSON Merge Patch (RFC 7396); If-Match is required',
    params: { name: organizationName },
    body: z.record(z.string(), z.unknown()).meta({
      description: 'A JSON Merge Patch (RFC 7396) of the settings; name cannot change',
    }),
    mediaType: MERGE_PATCH,
    response: oneOrganization,
    handle: async (ctx, caller, p, body, request) => {
      const etag = requiredIfMatch(request);
      return organizationAnswer(await changes(ctx, caller).updateOrganization(p.name ?? '', body, etag));
    },
  },
  {
    method: 'DELETE',
    url: '/organizations/:name',
    summary: 'Delete a stored organization and its memberships',
    params: { name: organizationName },
    handle: async (ctx, caller, p, _b, request) => {
      await changes(ctx, caller).deleteOrganization(p.name ?? '', ifMatch(request));
      return { status: 204 };
    },
  },
  {
    method: 'GET',
    url: '/organizations/:name/members',
    organizationAdmin: true,
    summary: "An organization's members by subject, a page at a time",
    params: { name: organizationName },
    query: membersQuery,
    response: z.object({
      members: z.array(memberOut),
      next: z.string().optional().meta({ description: 'The cursor of the next page; absent on the last' }),
    }),
    handle: async (ctx, _c, p, _b, request) => {
      const q = parsed(membersQuery, request.query);
      const page = await ctx.management.organizations.members(p.name ?? '', { cursor: q.cursor, limit: q.limit });
      return { status: 200, body: page };
    },
  },
  {
    method: 'PUT',
    url: '/organizations/:name/members/:subject',
    organizationAdmin: true,
    summary:
      "Make a user a member with roles (201), or replace a member's roles (200); 404 when no user has the subject. An organization admin (sigil:org:admin) replaces the roles of a member other than themselves (403) and gets 404 for a subject that is no member",
    params: { name: organizationName, subject },
    body: memberBody,
    response: z.object({ member: memberOut }),
    handle: async (ctx, caller, p, body) => {
      const [name, subject] = [p.name ?? '', p.subject ?? ''];
      // An organization admin changes the roles of other members only: people join by invitation,
      // with their consent, never drafted by a subject (which would also tell the users apart).
      if (caller.organizationAdmin) refuseOwnMembership(caller.sub, subject);
      const { roles } = parsed(memberBody, body);
      if (caller.organizationAdmin)
        return {
          status: 200,
          body: { member: await changes(ctx, caller).updateOrganizationMember(name, subject, roles) },
        };
      const { member, added } = await changes(ctx, caller).putOrganizationMember(name, subject, roles);
      return { status: added ? 201 : 200, body: { member } };
    },
  },
  {
    method: 'DELETE',
    url: '/organizations/:name/members/:subject',
    organizationAdmin: true,
    summary: 'End a membership; an organization admin (sigil:org:admin) cannot end their own (403)',
    params: { name: organizationName, subject },
    handle: async (ctx, caller, p) => {
      if (caller.organizationAdmin) refuseOwnMembership(caller.sub, p.subject ?? '');
      await changes(ctx, caller).removeOrganizationMember(p.name ?? '', p.subject ?? '');
      return { status: 204 };
    },
  },
  {
    method: 'GET',
    url: '/organizations/:name/invitations',
    organizationAdmin: true,
    summary: "An organization's pending invitations (neither accepted, revoked nor expired), newest first",
    params: { name: organizationName },
    response: z.object({ invitations: z.array(invitationOut) }),
    handle: async (ctx, _c, p) => ({
      status: 200,
      body: { invitations: await ctx.invitations.pending(p.name ?? '') },
    }),
  },
  {
    method: 'POST',
    url: '/organizations/:name/invitations',
    organizationAdmin: true,
    summary:
      'Invite an address with roles: mails a single-use link to /account/invitations/{token} (7 days); 409 without config email',
    created: true,
    params: { name: organizationName },
    body: invitationBody,
    response: z.object({ invitation: invitationOut }),
    handle: async (ctx, caller, p, body) => {
      const invite = parsed(invitationBody, body);
      const invitation = await ctx.invitations.invite(p.name ?? '', invite, caller, ADMIN_API_PATH);
      return { status: 201, body: { invitation } };
    },
  },
  {
    method: 'DELETE',
    url: '/organizations/:name/invitations/:id',
    organizationAdmin: true,
    summary: 'Revoke a pending invitation: its link no longer works',
    params: { name: organizationName, id: invitationId },
    handle: async (ctx, caller, p) => {
      await ctx.invitations.revoke(p.name ?? '', p.id ?? '', caller, ADMIN_API_PATH);
      return { status: 204 };
    },
  },
];
