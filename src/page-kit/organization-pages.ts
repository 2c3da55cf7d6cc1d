/**
 * What the organization picker shows (`/account/organization`, routes in
 * ui/organization-picker.ts): its template (Eta, auto-escaped like every page, see `pages.ts`;
 * its texts are in the catalogues of `locales/`).
 */

/**
 * The user's organizations as radio inputs `organization` (display name and name), `continue`
 * and `cancel`; none is chosen beforehand, so that the choice is the user's.
 */
const ORGANIZATION = `<% layout('@layout', { lang: it.lang, title: it.t.organizationTitle }) %>
<h1><%= it.t.organizationTitle %></h1>
<p id="organization-intro"><%= it.f(it.t.organizationIntro, { client: it.clientName }) %></p>
<% if (it.error) { %><p class="alert" role="alert" id="organization-error"><%= it.error %></p><% } %>
<form method="post" action="<%= it.base %>/account/organization">
<%~ include('@csrf', it) %>
<input type="hidden" name="interaction" value="<%= it.interaction %>">
<fieldset class="choices" aria-describedby="organization-intro<% if (it.error) { %> organization-error<% } %>">
<legend><%= it.t.organizationLegend %></legend>
<% it.organizations.forEach(function (o) { %><label class="check"><input type="radio" name="organization" value="<%= o.name %>" required> <span><%= o.displayName %> <small>(<%= o.name %>)</small></span></label>
<% }) %></fieldset>
<div class="actions">
<button type="submit" name="button" value="continue" class="primary"><%= it.t.continue %></button>
<button type="submit" name="button" value="cancel" formnovalidate><%= it.t.cancel %></button>
</div>
</form>`;

/** Templates by name, registered by the routes (`@organization`). */
export const ORGANIZATION_TEMPLATES: Readonly<Record<string, string>> = { organization: ORGANIZATION };
