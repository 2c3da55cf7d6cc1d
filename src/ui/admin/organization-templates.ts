/**
 * The console's organization page templates (Eta, escaped by default; replaceable by name through
 * `branding.templatesDir` like every page): the list with the create form, one organization's
 * settings (a form for a stored one, read-only for a config-file one), its members and its
 * invitations. The member and invitation pages name their links and forms by `it.at`, the path of
 * the organization's pages, so that they can be served elsewhere for one organization (a member
 * row marked `own`, the organization admin's own, shows its roles and no form); they link
 * back to `it.home`, to the settings page only where `it.settingsPage` says there is one, and
 * offer the add form only where `it.addsMembers` does. The home page of an organization admin's
 * console lists the organizations they administer, each with its two pages. A refused field is marked on
 * the field (`aria-invalid`, and its message by `aria-describedby`).
 */
import { MAX_MEMBER_ROLES, MAX_ROLE_NAME } from '../../admin/organization-members.js';
import { MAX_SUBJECT_LENGTH } from '../../config/schema.js';
import {
  MAX_DOMAIN_LENGTH,
  MAX_ORGANIZATION_DISPLAY_NAME,
  MAX_ORGANIZATION_DOMAINS,
  MAX_ORGANIZATION_NAME,
} from '../../config/schema/organizations.js';
import { MAX_INVITED_EMAIL } from '../../email/organization-invitations.js';
import { NOTICE } from './templates.js';

/** The longest roles field, characters: every role at its longest, a space between. */
export const MAX_ROLES_TEXT = MAX_MEMBER_ROLES * (MAX_ROLE_NAME + 1);
/** The longest domains field, characters: every domain at its longest, a line break between. */
export const MAX_DOMAINS_TEXT = MAX_ORGANIZATION_DOMAINS * (MAX_DOMAIN_LENGTH + 2);

/**
 * The attributes that tie a field to its hint (`<id>-hint`, when `hint`) and to its refusal
 * (`<id>-error`, when `it.errors[field]`), and mark it invalid then.
 */
function described(id: string, field: string, hint: boolean): string {
  const invalid = `<% if (it.errors.${field}) { %> aria-invalid="true"<% } %>`;
  return hint
    ? ` aria-describedby="${id}-hint<% if (it.errors.${field}) { %> ${id}-error<% } %>"${invalid}`
    : `<% if (it.errors.${field}) { %> aria-describedby="${id}-error"<% } %>${invalid}`;
}

/** A refused field's message, next to it. */
function fieldError(id: string, field: string): string {
  return `<% if (it.errors.${field}) { %><p class="alert" id="${id}-error"><%= it.errors.${field} %></p><% } %>`;
}

/**
 * The settings fields of an organization (`it.form`: displayName, domains as lines, providers as
 * `{ name, label, checked }`, membership): the create form's and the settings form's.
 */
const ORGANIZATION_FIELDS = `<label for="org-display-name"><%= it.t.consoleDisplayName %></label>
<input type="text" id="org-display-name" name="displayName" value="<%= it.form.displayName %>" maxlength="${MAX_ORGANIZATION_DISPLAY_NAME}" autocomplete="off" required${described('org-display-name', 'displayName', false)}>
${fieldError('org-display-name', 'displayName')}
<label for="org-domains"><%= it.t.consoleDomains %></label>
<textarea id="org-domains" name="domains" rows="3" maxlength="${MAX_DOMAINS_TEXT}" spellcheck="false"${described('org-domains', 'domains', true)}><%= it.form.domains %></textarea>
<p id="org-domains-hint"><%= it.t.consoleDomainsHint %></p>
${fieldError('org-domains', 'domains')}
<fieldset<% if (it.errors.identityProviders) { %> aria-describedby="org-providers-error"<% } %>><legend><%= it.t.consoleIdentityProviders %></legend>
<% it.form.providers.forEach(function (p) { %><label class="check"><input type="checkbox" name="identityProviders" value="<%= p.name %>"<% if (p.checked) { %> checked<% } %>> <span><%= p.label %><% if (p.label !== p.name) { %> <code><%= p.name %></code><% } %></span></label>
<% }) %><% if (it.form.providers.length === 0) { %><p><%= it.t.consoleNoProviders %></p><% } %>
</fieldset>
${fieldError('org-providers', 'identityProviders')}
<fieldset aria-describedby="org-membership-hint<% if (it.errors.membership) { %> org-membership-error<% } %>"><legend><%= it.t.consoleMembership %></legend>
<% ['invite', 'domain', 'open'].forEach(function (m) { %><label class="check"><input type="radio" name="membership" value="<%= m %>"<% if (it.form.membership === m) { %> checked<% } %>> <%= m === 'open' ? it.t.consoleMembershipOpen : m === 'domain' ? it.t.consoleMembershipDomain : it.t.consoleMembershipInvite %></label>
<% }) %></fieldset>
<p id="org-membership-hint"><%= it.t.consoleMembershipHint %></p>
${fieldError('org-membership', 'membership')}`;

/** An organization's membership kind as the pages name it. */
const MEMBERSHIP = `<%= o.membership === 'open' ? it.t.consoleMembershipOpen : o.membership === 'domain' ? it.t.consoleMembershipDomain : it.t.consoleMembershipInvite %>`;

const SOURCE = `<%= o.source === 'config' ? it.t.consoleSourceConfig : it.t.consoleSourceStore %>`;

const ORGANIZATIONS = `<% layout('@console-layout', { title: it.t.consoleOrganizations }) %>
<h1><%= it.t.consoleOrganizations %></h1>
${NOTICE}
<table>
<caption><%= it.t.consoleOrganizationsList %></caption>
<thead><tr><th scope="col"><%= it.t.consoleName %></th><th scope="col"><%= it.t.consoleDisplayName %></th><th scope="col"><%= it.t.consoleDomains %></th><th scope="col"><%= it.t.consoleMembership %></th><th scope="col"><%= it.t.consoleSource %></th></tr></thead>
<tbody>
<% it.organizations.forEach(function (o) { %><tr><td><a href="<%= it.base %>/admin/organizations/<%= encodeURIComponent(o.name) %>"><code><%= o.name %></code></a></td><td><%= o.displayName %></td><td><%= o.domains.join(', ') %></td><td>${MEMBERSHIP}</td><td>${SOURCE}</td></tr>
<% }) %><% if (it.organizations.length === 0) { %><tr><td colspan="5"><%= it.t.consoleNone %></td></tr><% } %>
</tbody>
</table>
<h2 id="create-organization"><%= it.t.consoleCreateOrganization %></h2>
<form method="post" action="<%= it.base %>/admin/organizations" aria-labelledby="create-organization">
<%~ include('@csrf', it) %>
<label for="org-name"><%= it.t.consoleName %></label>
<input type="text" id="org-name" name="name" value="<%= it.form.name %>" maxlength="${MAX_ORGANIZATION_NAME}" autocomplete="off" spellcheck="false" required${described('org-name', 'name', true)}>
<p id="org-name-hint"><%= it.t.consoleOrganizationNameHint %></p>
${fieldError('org-name', 'name')}
<%~ include('@console-organization-fields', it) %>
<div class="actions"><button type="submit" name="button" value="create" class="primary"><%= it.t.consoleCreate %></button></div>
</form>`;

/**
 * The links between one organization's pages (`it.page`: settings, members or invitations), the
 * settings page's only where there is one.
 */
const ORGANIZATION_NAV = `<nav aria-label="<%= it.t.consoleOrganizationPages %>"><ul class="tabs">
<% if (it.settingsPage) { %><li><a href="<%= it.base %><%= it.at %>"<% if (it.page === 'settings') { %> aria-current="page"<% } %>><%= it.t.consoleEditClient %></a></li>
<% } %><li><a href="<%= it.base %><%= it.at %>/members"<% if (it.page === 'members') { %> aria-current="page"<% } %>><%= it.t.consoleMembers %></a></li>
<li><a href="<%= it.base %><%= it.at %>/invitations"<% if (it.page === 'invitations') { %> aria-current="page"<% } %>><%= it.t.consoleInvitations %></a></li>
</ul></nav>`;

const ORGANIZATION = `<% layout('@console-layout', { title: it.organization.displayName }) %>
<p><a href="<%= it.base %>/admin/organizations"><%= it.t.consoleBackToOrganizations %></a></p>
<h1><%= it.organization.displayName %></h1>
<%~ include('@console-organization-nav', it) %>
${NOTICE}
<% var o = it.organization; %><dl>
<dt><%= it.t.consoleName %></dt><dd><code><%= o.name %></code></dd>
<dt><%= it.t.consoleOrganizationId %></dt><dd><code><%= o.id %></code></dd>
<dt><%= it.t.consoleSource %></dt><dd>${SOURCE}</dd>
<% if (o.source === 'config') { %><dt><%= it.t.consoleDomains %></dt><dd><%= o.domains.join(', ') || it.t.consoleNone %></dd>
<dt><%= it.t.consoleIdentityProviders %></dt><dd><%= o.identityProviders.join(', ') || it.t.consoleNone %></dd>
<dt><%= it.t.consoleMembership %></dt><dd>${MEMBERSHIP}</dd><% } %>
</dl>
<% if (o.source === 'store') { %>
<h2 id="edit-organization"><%= it.t.consoleEditClient %></h2>
<form method="post" action="<%= it.base %><%= it.at %>" aria-labelledby="edit-organization">
<%~ include('@csrf', it) %>
<input type="hidden" name="etag" value="<%= it.etag %>">
<%~ include('@console-organization-fields', it) %>
<div class="actions"><button type="submit" name="button" value="save" class="primary"><%= it.t.consoleSave %></button></div>
</form>
<h2 id="delete-organization"><%= it.t.consoleDeleteOrganization %></h2>
<p><%= it.t.consoleDeleteOrganizationHint %></p>
<form method="post" action="<%= it.base %><%= it.at %>/delete" aria-labelledby="delete-organization">
<%~ include('@csrf', it) %>
<input type="hidden" name="etag" value="<%= it.etag %>">
<div class="actions"><button type="submit" name="button" value="delete"><%= it.t.consoleDeleteOrganization %></button></div>
</form>
<% } else { %><p class="notice" role="note"><%= it.t.consoleOrganizationReadOnly %></p><% } %>`;

/** The heading of a member or invitation page: the way back, the organization and its pages. */
const ORGANIZATION_HEAD = `<p><a href="<%= it.base %><%= it.home %>"><%= it.t.consoleBackToOrganizations %></a></p>
<h1><%= it.f(it.page === 'members' ? it.t.consoleMembersOf : it.t.consoleInvitationsOf, { name: it.displayName }) %></h1>
<%~ include('@console-organization-nav', it) %>
${NOTICE}`;

const MEMBERS = `<% layout('@console-layout', { title: it.f(it.t.consoleMembersOf, { name: it.displayName }) }) %>
${ORGANIZATION_HEAD}
<table>
<caption><%= it.t.consoleMembersList %></caption>
<thead><tr><th scope="col"><%= it.t.consoleSubject %></th><th scope="col"><%= it.t.username %></th><th scope="col"><%= it.t.consoleName %></th><th scope="col"><%= it.t.consoleRoles %></th><th scope="col"><%= it.t.consoleActions %></th></tr></thead>
<tbody>
<% it.members.forEach(function (m, i) { %><tr><td><code><%= m.subject %></code></td><td><%= m.username %></td><td><%= m.name %></td><% if (m.own) { %><td><%= m.roles.join(' ') %></td><td><%= it.t.consoleOwnMembership %></td><% } else { %><td><form method="post" action="<%= it.base %><%= it.at %>/members/roles" class="row">
<%~ include('@csrf', it) %>
<input type="hidden" name="subject" value="<%= m.subject %>">
<input type="text" id="roles-<%= i %>" name="roles" value="<%= m.roles.join(' ') %>" maxlength="${MAX_ROLES_TEXT}" autocomplete="off" spellcheck="false" aria-label="<%= it.f(it.t.consoleRolesOf, { user: m.label }) %>">
<button type="submit" name="button" value="roles" aria-label="<%= it.f(it.t.consoleSaveRolesOf, { user: m.label }) %>"><%= it.t.consoleSave %></button>
</form></td><td><form method="post" action="<%= it.base %><%= it.at %>/members/remove" class="inline">
<%~ include('@csrf', it) %>
<input type="hidden" name="subject" value="<%= m.subject %>">
<button type="submit" name="button" value="remove" aria-label="<%= it.f(it.t.consoleRemoveMemberOf, { user: m.label }) %>"><%= it.t.consoleRemove %></button>
</form></td><% } %></tr>
<% }) %><% if (it.members.length === 0) { %><tr><td colspan="5"><%= it.t.consoleNone %></td></tr><% } %>
</tbody>
</table>
<% if (it.next) { %><p><a href="<%= it.base %><%= it.at %>/members?cursor=<%= encodeURIComponent(it.next) %>" rel="next"><%= it.t.consoleNextMembers %></a></p><% } %>
<% if (it.addsMembers) { %><h2 id="add-member"><%= it.t.consoleAddMember %></h2>
<form method="post" action="<%= it.base %><%= it.at %>/members" aria-labelledby="add-member">
<%~ include('@csrf', it) %>
<label for="member-user"><%= it.t.consoleMemberUser %></label>
<input type="text" id="member-user" name="user" value="<%= it.form.user || '' %>" maxlength="${MAX_SUBJECT_LENGTH}" autocomplete="off" spellcheck="false" required${described('member-user', 'user', true)}>
<p id="member-user-hint"><%= it.t.consoleMemberUserHint %></p>
${fieldError('member-user', 'user')}
<label for="member-roles"><%= it.t.consoleRoles %></label>
<input type="text" id="member-roles" name="roles" value="<%= it.form.roles || '' %>" maxlength="${MAX_ROLES_TEXT}" autocomplete="off" spellcheck="false"${described('member-roles', 'roles', true)}>
<p id="member-roles-hint"><%= it.t.consoleSpaceSeparated %></p>
${fieldError('member-roles', 'roles')}
<div class="actions"><button type="submit" name="button" value="add" class="primary"><%= it.t.consoleAddMember %></button></div>
</form><% } %>`;

const INVITATIONS = `<% layout('@console-layout', { title: it.f(it.t.consoleInvitationsOf, { name: it.displayName }) }) %>
${ORGANIZATION_HEAD}
<table>
<caption><%= it.t.consolePendingInvitations %></caption>
<thead><tr><th scope="col"><%= it.t.consoleEmail %></th><th scope="col"><%= it.t.consoleRoles %></th><th scope="col"><%= it.t.consoleExpires %></th><th scope="col"><%= it.t.consoleActions %></th></tr></thead>
<tbody>
<% it.invitations.forEach(function (v) { %><tr><td><%= v.email %></td><td><%= v.roles.join(' ') %></td><td><%= v.expires %></td><td><form method="post" action="<%= it.base %><%= it.at %>/invitations/revoke" class="inline">
<%~ include('@csrf', it) %>
<input type="hidden" name="id" value="<%= v.id %>">
<button type="submit" name="button" value="revoke" aria-label="<%= it.f(it.t.consoleRevokeInvitationOf, { email: v.email }) %>"><%= it.t.consoleRevokeInvitation %></button>
</form></td></tr>
<% }) %><% if (it.invitations.length === 0) { %><tr><td colspan="4"><%= it.t.consoleNone %></td></tr><% } %>
</tbody>
</table>
<h2 id="invite"><%= it.t.consoleInviteByEmail %></h2>
<% if (!it.mail) { %><p class="notice" role="note"><%= it.t.consoleMailOff %></p><% } %>
<form method="post" action="<%= it.base %><%= it.at %>/invitations" aria-labelledby="invite" aria-describedby="invite-hint">
<%~ include('@csrf', it) %>
<p id="invite-hint"><%= it.t.consoleInviteHint %></p>
<label for="invite-email"><%= it.t.consoleEmail %></label>
<input type="email" id="invite-email" name="email" value="<%= it.form.email || '' %>" maxlength="${MAX_INVITED_EMAIL}" autocomplete="off" required${described('invite-email', 'email', false)}>
${fieldError('invite-email', 'email')}
<label for="invite-roles"><%= it.t.consoleRoles %></label>
<input type="text" id="invite-roles" name="roles" value="<%= it.form.roles || '' %>" maxlength="${MAX_ROLES_TEXT}" autocomplete="off" spellcheck="false"${described('invite-roles', 'roles', true)}>
<p id="invite-roles-hint"><%= it.t.consoleSpaceSeparated %></p>
${fieldError('invite-roles', 'roles')}
<div class="actions"><button type="submit" name="button" value="invite" class="primary"><%= it.t.consoleInvite %></button></div>
</form>`;

/**
 * The home page of an organization admin's console: the organizations they administer
 * (`it.organizations`: name, displayName, `at` the path of its pages), `it.more` when the list
 * stops at `it.max`.
 */
const MY_ORGANIZATIONS = `<% layout('@console-layout', { title: it.t.consoleYourOrganizations }) %>
<h1><%= it.t.consoleYourOrganizations %></h1>
${NOTICE}
<p><%= it.t.consoleYourOrganizationsIntro %></p>
<table>
<caption><%= it.t.consoleYourOrganizationsList %></caption>
<thead><tr><th scope="col"><%= it.t.consoleDisplayName %></th><th scope="col"><%= it.t.consoleName %></th><th scope="col"><%= it.t.consoleOrganizationPages %></th></tr></thead>
<tbody>
<% it.organizations.forEach(function (o) { %><tr><td><%= o.displayName %></td><td><code><%= o.name %></code></td><td><a href="<%= it.base %><%= o.at %>/members" aria-label="<%= it.f(it.t.consoleMembersOf, { name: o.displayName }) %>"><%= it.t.consoleMembers %></a> · <a href="<%= it.base %><%= o.at %>/invitations" aria-label="<%= it.f(it.t.consoleInvitationsOf, { name: o.displayName }) %>"><%= it.t.consoleInvitations %></a></td></tr>
<% }) %><% if (it.organizations.length === 0) { %><tr><td colspan="3"><%= it.t.consoleNoAdministeredOrganizations %></td></tr><% } %>
</tbody>
</table>
<% if (it.more) { %><p class="notice" role="note"><%= it.f(it.t.consoleMoreOrganizations, { max: it.max }) %></p><% } %>`;

/** The organization templates by page name (partials too, included as `@<name>`). */
export const ORGANIZATION_TEMPLATES: Readonly<Record<string, string>> = {
  'console-organization-fields': ORGANIZATION_FIELDS,
  'console-organization-nav': ORGANIZATION_NAV,
  'console-organizations': ORGANIZATIONS,
  'console-organization': ORGANIZATION,
  'console-organization-members': MEMBERS,
  'console-organization-invitations': INVITATIONS,
  'console-my-organizations': MY_ORGANIZATIONS,
};

/** The styles of the organization pages, added to the console's style sheet. */
export const ORGANIZATION_STYLES = `
ul.tabs { list-style: none; display: flex; flex-wrap: wrap; gap: .25rem 1rem; margin: .5rem 0 1rem; padding: 0; border-bottom: 1px solid var(--line); }
ul.tabs a { display: inline-block; padding: .5rem .25rem; color: var(--fg); text-decoration: none; border-bottom: 3px solid transparent; }
ul.tabs a[aria-current=page] { border-bottom-color: var(--accent); font-weight: 600; }
td form.row { flex-wrap: nowrap; gap: .5rem; }
td form.row input { min-width: 8rem; }
`;
