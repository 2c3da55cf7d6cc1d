/**
 * The page where a signed-in user answers applications' backchannel authentication requests
 * (OpenID CIBA Core 1.0; route in ui/backchannel-requests.ts): each waiting request with the
 * client's display name, the scopes, the binding message and the authorization details (shown as
 * the consent page shows them), and a form per request
 * (`button=approve` / `button=deny`, CSRF-checked). Eta escapes every value.
 */
import { authorizationDetailsFragment } from './authorization-details-view.js';

/** One template: `requests` the list (may be empty), `notice` a text key shown above it. */
const REQUESTS = `<% layout('@layout', { lang: it.lang, title: it.t.cibaTitle }) %>
<h1><%= it.t.cibaTitle %></h1>
<% if (it.notice) { %><p role="status"><%= it.t[it.notice] %></p><% } %>
<% if (it.requests.length === 0) { %><p><%= it.t.cibaNone %></p><% } else { %><p><%= it.t.cibaIntro %></p>
<% it.requests.forEach(function (r) { %><section class="request">
<h2><%= r.client %></h2>
<% if (r.bindingMessage !== undefined) { %><p><%= it.t.cibaMessage %>: <strong><%= r.bindingMessage %></strong></p><% } %>
<p><%= it.t.cibaScopes %>: <%= r.scopes.join(', ') %></p>
${authorizationDetailsFragment('r.details')}
<% if (r.secondFactor) { %><p role="note"><%= it.t.cibaSecondFactor %></p><% } %>
<form method="post" action="<%= it.base %>/account/requests">
<input type="hidden" name="csrf_token" value="<%= it.csrf %>">
<input type="hidden" name="request" value="<%= r.id %>">
<div class="actions"><button type="submit" class="primary" name="button" value="approve"><%= it.t.cibaApprove %></button>
<button type="submit" name="button" value="deny"><%= it.t.cibaDeny %></button></div>
</form></section><% }) %><% } %>`;

/** Templates by name (`@requests`), registered by the route. */
export const BACKCHANNEL_TEMPLATES: Readonly<Record<string, string>> = { requests: REQUESTS };
