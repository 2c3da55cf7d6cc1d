/**
 * The console's page templates (Eta, escaped by default; a deployment may replace each by name
 * through `branding.templatesDir`, under the same checks as every page). The console layout adds
 * to the pages' layout what a tool with several pages needs: a skip link, a banner with the
 * product name and the signed-in admin's sign-out button, a navigation landmark marking the
 * current page (`aria-current`): the full console's sections for its admins (`it.fullConsole`),
 * the one section of an organization admin's console otherwise, and a wide main region. Every POST form carries the CSRF field.
 */
import { MAX_USERNAME_LENGTH } from '../../config/schema.js';

const LAYOUT = `<!doctype html>
<html lang="<%= it.lang %>">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title><%= it.title %> · <%= it.t.consoleTitle %> · <%= it.brand.productName %></title>
<% if (it.brand.favicon) { %><link rel="icon" href="<%= it.brand.favicon %>">
<% } %><link rel="stylesheet" href="<%= it.base %>/assets/sigil.css">
<link rel="stylesheet" href="<%= it.base %>/admin/console.css">
<% if (it.brand.theme) { %><link rel="stylesheet" href="<%= it.brand.theme %>">
<% } %></head>
<body class="console">
<a class="skip" href="#content"><%= it.t.consoleSkip %></a>
<header class="console-bar">
<p class="brand<%= it.brand.logo ? ' with-logo' : '' %>"><% if (it.brand.logo) { %><img src="<%= it.brand.logo %>" alt=""><% } %><%= it.brand.productName %> <span><%= it.t.consoleTitle %></span></p>
<nav aria-label="<%= it.t.consoleNav %>"><ul>
<% (it.fullConsole ? [['users', it.t.consoleUsers], ['organizations', it.t.consoleOrganizations], ['clients', it.t.consoleClients], ['resources', it.t.consoleResources], ['keys', it.t.consoleKeys], ['webhooks', it.t.consoleWebhooks], ['saml-service-providers', it.t.consoleSamlNav], ['events', it.t.consoleEvents]] : [['my-organizations', it.t.consoleYourOrganizations]]).forEach(function (s) { %><li><a href="<%= it.base %>/admin/<%= s[0] %>"<% if (it.section === s[0]) { %> aria-current="page"<% } %>><%= s[1] %></a></li>
<% }) %></ul></nav>
<form method="post" action="<%= it.base %>/admin/logout" class="inline">
<%~ include('@csrf', it) %>
<button type="submit" name="button" value="logout"><%= it.t.consoleSignOut %></button>
</form>
</header>
<main id="content" tabindex="-1">
<%~ it.body %>
</main>
</body>
</html>`;

/** The page's confirmation (`it.notice`) and refusal (`it.error`, `#form-error`), shared by the console's templates. */
export const NOTICE = `<% if (it.notice) { %><p class="notice" role="status"><%= it.notice %></p><% } %>
<% if (it.error) { %><p class="alert" role="alert" id="form-error"><%= it.error %></p><% } %>`;

const USERS = `<% layout('@console-layout', { title: it.t.consoleUsers }) %>
<h1><%= it.t.consoleUsers %></h1>
${NOTICE}
<form method="get" action="<%= it.base %>/admin/users" role="search" class="row">
<label for="q"><%= it.t.consoleSearchUsers %></label>
<input type="search" id="q" name="q" value="<%= it.q %>" maxlength="100">
<button type="submit"><%= it.t.consoleSearch %></button>
</form>
<table>
<caption><%= it.t.consoleUsersFound %></caption>
<thead><tr><th scope="col"><%= it.t.username %></th><th scope="col"><%= it.t.consoleName %></th><th scope="col"><%= it.t.consoleStatus %></th><th scope="col"><%= it.t.consoleSource %></th></tr></thead>
<tbody>
<% it.users.forEach(function (u) { %><tr><td><a href="<%= it.base %>/admin/users/<%= encodeURIComponent(u.subjectId) %>"><%= u.username %></a></td><td><%= u.name %></td><td><%= u.active ? it.t.consoleActive : it.t.consoleDisabled %></td><td><%= u.source === 'config' ? it.t.consoleSourceConfig : it.t.consoleSourceStore %></td></tr>
<% }) %><% if (it.users.length === 0) { %><tr><td colspan="4"><%= it.t.consoleNone %></td></tr><% } %>
</tbody>
</table>
<h2 id="create-user"><%= it.t.consoleCreateUser %></h2>
<form method="post" action="<%= it.base %>/admin/users" aria-labelledby="create-user">
<%~ include('@csrf', it) %>
<label for="new-username"><%= it.t.username %></label>
<input type="text" id="new-username" name="username" value="<%= it.form.username || '' %>" maxlength="${MAX_USERNAME_LENGTH}" autocomplete="off" required>
<label for="new-name"><%= it.t.consoleName %></label>
<input type="text" id="new-name" name="name" value="<%= it.form.name || '' %>" maxlength="255" autocomplete="off">
<label for="new-email"><%= it.t.consoleEmail %></label>
<input type="email" id="new-email" name="email" value="<%= it.form.email || '' %>" maxlength="320" autocomplete="off">
<label for="new-password"><%= it.t.password %></label>
<input type="password" id="new-password" name="password" maxlength="256" autocomplete="new-password">
<div class="actions"><button type="submit" name="button" value="create" class="primary"><%= it.t.consoleCreate %></button></div>
</form>
<h2 id="groups-heading"><%= it.t.consoleGroups %></h2>
<table>
<caption><%= it.t.consoleGroupsList %></caption>
<thead><tr><th scope="col"><%= it.t.consoleName %></th><th scope="col"><%= it.t.consoleMembers %></th><th scope="col"><%= it.t.consoleActions %></th></tr></thead>
<tbody>
<% it.groups.forEach(function (g) { %><tr><td><%= g.name %></td><td><%= g.members %></td><td><form method="post" action="<%= it.base %>/admin/groups/<%= encodeURIComponent(g.id) %>/delete" class="inline">
<%~ include('@csrf', it) %>
<button type="submit" name="button" value="delete" aria-label="<%= it.f(it.t.consoleDeleteGroupLabel, { name: g.name }) %>"><%= it.t.consoleDeleteResource %></button>
</form></td></tr>
<% }) %><% if (it.groups.length === 0) { %><tr><td colspan="3"><%= it.t.consoleNoGroups %></td></tr><% } %>
</tbody>
</table>
<h3 id="create-group"><%= it.t.consoleCreateGroup %></h3>
<form method="post" action="<%= it.base %>/admin/groups" aria-labelledby="create-group">
<%~ include('@csrf', it) %>
<label for="new-group"><%= it.t.consoleGroupName %></label>
<input type="text" id="new-group" name="displayName" value="<%= it.form.displayName || '' %>" maxlength="200" autocomplete="off" required>
<div class="actions"><button type="submit" name="button" value="create-group"><%= it.t.consoleCreateGroup %></button></div>
</form>`;

const USER = `<% layout('@console-layout', { title: it.user.username }) %>
<p><a href="<%= it.base %>/admin/users"><%= it.t.consoleBackToUsers %></a></p>
<h1><%= it.user.username %></h1>
${NOTICE}
<dl>
<dt><%= it.t.consoleSubject %></dt><dd><code><%= it.user.subjectId %></code></dd>
<dt><%= it.t.consoleStatus %></dt><dd><%= it.user.active ? it.t.consoleActive : it.t.consoleDisabled %></dd>
<dt><%= it.t.consoleSource %></dt><dd><%= it.user.source === 'config' ? it.t.consoleSourceConfig : it.t.consoleSourceStore %></dd>
<dt><%= it.t.consoleGroups %></dt><dd><%= it.groups.length > 0 ? it.groups.join(', ') : it.t.consoleNone %></dd>
<dt><%= it.t.consoleFactors %></dt><dd><%= it.factors %></dd>
<% if (it.user.passwordChangeRequired) { %><dt><%= it.t.password %></dt><dd><%= it.t.consolePasswordChangeRequired %></dd><% } %>
</dl>
<% if (it.user.source === 'store') { %>
<h2 id="status-heading"><%= it.t.consoleStatus %></h2>
<form method="post" action="<%= it.base %>/admin/users/<%= encodeURIComponent(it.user.subjectId) %>/active" aria-labelledby="status-heading">
<%~ include('@csrf', it) %>
<input type="hidden" name="active" value="<%= it.user.active ? 'false' : 'true' %>">
<div class="actions"><button type="submit" name="button" value="active"><%= it.user.active ? it.t.consoleDisable : it.t.consoleEnable %></button></div>
</form>
<h2 id="password-heading"><%= it.t.consoleTemporaryPassword %></h2>
<form method="post" action="<%= it.base %>/admin/users/<%= encodeURIComponent(it.user.subjectId) %>/password" aria-labelledby="password-heading">
<%~ include('@csrf', it) %>
<%~ include('@form-fields', it) %>
<div class="actions"><button type="submit" name="button" value="password"><%= it.t.consoleSetTemporaryPassword %></button></div>
</form>
<h2 id="claims-heading"><%= it.t.consoleClaims %></h2>
<form method="post" action="<%= it.base %>/admin/users/<%= encodeURIComponent(it.user.subjectId) %>/claims" aria-labelledby="claims-heading">
<%~ include('@csrf', it) %>
<label for="claims"><%= it.t.consoleClaimsJson %></label>
<textarea id="claims" name="claims" rows="8" maxlength="16000" spellcheck="false" aria-describedby="claims-hint"><%= it.claims %></textarea>
<p id="claims-hint"><%= it.t.consoleClaimsHint %></p>
<div class="actions"><button type="submit" name="button" value="claims" class="primary"><%= it.t.consoleSave %></button></div>
</form>
<h2 id="group-heading"><%= it.t.consoleGroups %></h2>
<% if (it.allGroups.length > 0) { %><form method="post" action="<%= it.base %>/admin/users/<%= encodeURIComponent(it.user.subjectId) %>/groups" aria-labelledby="group-heading">
<%~ include('@csrf', it) %>
<fieldset><legend><%= it.t.consoleGroupsMember %></legend>
<% it.allGroups.forEach(function (g) { %><label class="check"><input type="checkbox" name="group" value="<%= g.id %>"<% if (g.member) { %> checked<% } %>> <%= g.name %></label>
<% }) %></fieldset>
<div class="actions"><button type="submit" name="button" value="groups"><%= it.t.consoleSave %></button></div>
</form><% } else { %><p><%= it.t.consoleNoGroups %></p><% } %>
<% if (it.mail) { %><h2 id="mail-heading"><%= it.t.consoleMail %></h2>
<p><%= it.t.consoleMailHint %></p>
<div class="actions">
<form method="post" action="<%= it.base %>/admin/users/<%= encodeURIComponent(it.user.subjectId) %>/mail" class="inline">
<%~ include('@csrf', it) %>
<button type="submit" name="button" value="reset"><%= it.t.consoleSendReset %></button>
</form>
<form method="post" action="<%= it.base %>/admin/users/<%= encodeURIComponent(it.user.subjectId) %>/mail" class="inline">
<%~ include('@csrf', it) %>
<button type="submit" name="button" value="verify"><%= it.t.consoleSendVerify %></button>
</form>
</div><% } %>
<% } else { %><p class="notice" role="note"><%= it.t.consoleUserReadOnly %></p><% } %>
<h2 id="mfa-heading"><%= it.t.consoleFactors %></h2>
<form method="post" action="<%= it.base %>/admin/users/<%= encodeURIComponent(it.user.subjectId) %>/mfa" aria-labelledby="mfa-heading">
<%~ include('@csrf', it) %>
<div class="actions"><button type="submit" name="button" value="reset"><%= it.t.consoleResetMfa %></button></div>
</form>
<h2 id="sessions-heading"><%= it.t.consoleSessions %></h2>
<% if (it.sessions.length === 0) { %><p><%= it.t.consoleNoSessions %></p><% } else { %>
<ul class="factors" aria-labelledby="sessions-heading">
<% it.sessions.forEach(function (s) { %><li><span><%= it.f(it.t.consoleSessionSince, { time: s.time }) %><% if (s.browser) { %> · <%= s.browser %><% } %><% if (s.clients.length > 0) { %><br><%= it.t.consoleSessionApps %> <% s.clients.forEach(function (c, i) { %><% if (i > 0) { %>, <% } %><a href="<%= it.base %>/admin/clients/<%= encodeURIComponent(c) %>"><%= c %></a><% }) %><% } %><br><code><%= s.sid %></code></span>
<form method="post" action="<%= it.base %>/admin/users/<%= encodeURIComponent(it.user.subjectId) %>/sessions/revoke" class="inline">
<%~ include('@csrf', it) %>
<input type="hidden" name="sid" value="<%= s.sid %>">
<button type="submit" name="button" value="revoke" aria-label="<%= it.f(it.t.consoleRevokeSessionLabel, { sid: s.sid }) %>"><%= it.t.consoleRevoke %></button>
</form></li>
<% }) %></ul><% } %>`;

const CLIENTS = `<% layout('@console-layout', { title: it.t.consoleClients }) %>
<h1><%= it.t.consoleClients %></h1>
${NOTICE}
<p><a href="<%= it.base %>/admin/clients/new" class="button primary"><%= it.t.consoleNewClient %></a></p>
<table>
<caption><%= it.t.consoleClientsList %></caption>
<thead><tr><th scope="col">client_id</th><th scope="col"><%= it.t.consoleGrantTypes %></th><th scope="col"><%= it.t.consoleSource %></th></tr></thead>
<tbody>
<% it.clients.forEach(function (c) { %><tr><td><a href="<%= it.base %>/admin/clients/<%= encodeURIComponent(c.clientId) %>"><%= c.clientId %></a></td><td><%= c.allowedGrantTypes.join(', ') %></td><td><%= c.source === 'config' ? it.t.consoleSourceConfig : it.t.consoleSourceStore %></td></tr>
<% }) %></tbody>
</table>`;

const CLIENT_NEW = `<% layout('@console-layout', { title: it.t.consoleCreateClient }) %>
<p><a href="<%= it.base %>/admin/clients"><%= it.t.consoleBackToClients %></a></p>
<h1 id="create-client"><%= it.t.consoleCreateClient %></h1>
${NOTICE}
<p><%= it.t.consoleCreateClientHint %></p>
<form method="post" action="<%= it.base %>/admin/clients/new" aria-labelledby="create-client">
<%~ include('@csrf', it) %>
<div class="field"><label class="check"><input type="checkbox" id="f-public" name="public" value="yes"<% if (it.public) { %> checked<% } %>> <%= it.t.consolePublicClient %></label></div>
<%~ include('@form-fields', it) %>
<div class="actions"><button type="submit" name="button" value="create" class="primary"><%= it.t.consoleCreate %></button></div>
</form>`;

const CLIENT = `<% layout('@console-layout', { title: it.client.clientId }) %>
<p><a href="<%= it.base %>/admin/clients"><%= it.t.consoleBackToClients %></a></p>
<h1><%= it.client.clientId %></h1>
${NOTICE}
<% if (it.secret) { %><div class="secret" role="status"><p><strong><%= it.t.consoleSecretOnce %></strong></p><p><code id="client-secret"><%= it.secret %></code></p></div><% } %>
<dl>
<dt><%= it.t.consoleSource %></dt><dd><%= it.source === 'config' ? it.t.consoleSourceConfig : it.t.consoleSourceStore %></dd>
<dt><%= it.t.consoleClientType %></dt><dd><%= it.client.requireClientSecret === false ? it.t.consolePublicClient : it.t.consoleConfidentialClient %></dd>
</dl>
<% if (it.source === 'store') { %>
<h2 id="edit-client"><%= it.t.consoleEditClient %></h2>
<form method="post" action="<%= it.base %>/admin/clients/<%= encodeURIComponent(it.client.clientId) %>" aria-labelledby="edit-client">
<%~ include('@csrf', it) %>
<input type="hidden" name="etag" value="<%= it.etag %>">
<%~ include('@form-fields', it) %>
<div class="actions"><button type="submit" name="button" value="save" class="primary"><%= it.t.consoleSave %></button></div>
</form>
<% if (it.client.requireClientSecret !== false) { %><h2 id="rotate-secret"><%= it.t.consoleRotateSecret %></h2>
<p><%= it.t.consoleRotateSecretHint %></p>
<form method="post" action="<%= it.base %>/admin/clients/<%= encodeURIComponent(it.client.clientId) %>/secret" aria-labelledby="rotate-secret">
<%~ include('@csrf', it) %>
<input type="hidden" name="etag" value="<%= it.etag %>">
<div class="actions"><button type="submit" name="button" value="rotate"><%= it.t.consoleRotateSecret %></button></div>
</form><% } %>
<h2 id="delete-client"><%= it.t.consoleDeleteClient %></h2>
<p><%= it.t.consoleDeleteClientHint %></p>
<p><a href="<%= it.base %>/admin/clients/<%= encodeURIComponent(it.client.clientId) %>/delete" class="button"><%= it.t.consoleDeleteClient %></a></p>
<% } else { %><p class="notice" role="note"><%= it.t.consoleClientReadOnly %></p>
<dl><% it.settings.forEach(function (s) { %><dt><code><%= s.key %></code></dt><dd><%= s.value %></dd>
<% }) %></dl><% } %>`;

const CLIENT_DELETE = `<% layout('@console-layout', { title: it.t.consoleDeleteClient }) %>
<p><a href="<%= it.base %>/admin/clients/<%= encodeURIComponent(it.client.clientId) %>"><%= it.f(it.t.consoleBackToClient, { client: it.client.clientId }) %></a></p>
<h1 id="delete-client"><%= it.f(it.t.consoleDeleteClientTitle, { client: it.client.clientId }) %></h1>
${NOTICE}
<p><%= it.t.consoleDeleteClientHint %></p>
<form method="post" action="<%= it.base %>/admin/clients/<%= encodeURIComponent(it.client.clientId) %>/delete" aria-labelledby="delete-client">
<%~ include('@csrf', it) %>
<input type="hidden" name="etag" value="<%= it.etag %>">
<div class="actions"><button type="submit" name="button" value="delete" class="primary"><%= it.t.consoleDeleteClientConfirm %></button>
<a href="<%= it.base %>/admin/clients/<%= encodeURIComponent(it.client.clientId) %>" class="button"><%= it.t.cancel %></a></div>
</form>`;

const SOURCE = `<%= it.source === 'config' ? it.t.consoleSourceConfig : it.source === 'built-in' ? it.t.consoleSourceBuiltIn : it.t.consoleSourceStore %>`;

const RESOURCES = `<% layout('@console-layout', { title: it.t.consoleResources }) %>
<h1><%= it.t.consoleResources %></h1>
${NOTICE}
<p><%= it.t.consoleResourcesIntro %></p>
<% it.tables.forEach(function (tb) { %><table>
<caption><%= tb.caption %></caption>
<thead><tr><th scope="col"><%= it.t.consoleName %></th><th scope="col"><%= tb.detailHeading %></th><th scope="col"><%= it.t.consoleSource %></th></tr></thead>
<tbody><% tb.rows.forEach(function (r) { %><tr><td><a href="<%= it.base %>/admin/resources/<%= tb.slug %>/<%= encodeURIComponent(r.name) %>"><code><%= r.name %></code></a></td><td><%= r.detail %></td><td><%= r.source === 'config' ? it.t.consoleSourceConfig : r.source === 'built-in' ? it.t.consoleSourceBuiltIn : it.t.consoleSourceStore %></td></tr>
<% }) %><% if (tb.rows.length === 0) { %><tr><td colspan="3"><%= it.t.consoleNone %></td></tr><% } %></tbody>
</table>
<p><a href="<%= it.base %>/admin/resources/new/<%= tb.slug %>"><%= tb.create %></a></p>
<% }) %>`;

const RESOURCE_NEW = `<% layout('@console-layout', { title: it.title }) %>
<p><a href="<%= it.base %>/admin/resources"><%= it.t.consoleBackToResources %></a></p>
<h1><%= it.title %></h1>
${NOTICE}
<form method="post" action="<%= it.base %>/admin/resources/new/<%= it.slug %>" aria-label="<%= it.title %>">
<%~ include('@csrf', it) %>
<%~ include('@form-fields', it) %>
<div class="actions"><button type="submit" name="button" value="create" class="primary"><%= it.t.consoleCreate %></button></div>
</form>`;

const RESOURCE = `<% layout('@console-layout', { title: it.name }) %>
<p><a href="<%= it.base %>/admin/resources"><%= it.t.consoleBackToResources %></a></p>
<h1><%= it.name %></h1>
${NOTICE}
<% if (it.secret) { %><div class="secret" role="status"><p><strong><%= it.t.consoleApiSecretOnce %></strong></p><p><code id="resource-secret"><%= it.secret %></code></p></div><% } %>
<dl>
<dt><%= it.t.consoleKind %></dt><dd><%= it.kindLabel %></dd>
<dt><%= it.t.consoleSource %></dt><dd>${SOURCE}</dd>
<% it.settings.forEach(function (s) { %><dt><code><%= s.key %></code></dt><dd><%= s.value %></dd>
<% }) %></dl>
<% if (it.source === 'store') { %>
<h2 id="edit-resource"><%= it.t.consoleEditClient %></h2>
<form method="post" action="<%= it.base %>/admin/resources/<%= it.slug %>/<%= encodeURIComponent(it.name) %>" aria-labelledby="edit-resource">
<%~ include('@csrf', it) %>
<input type="hidden" name="etag" value="<%= it.etag %>">
<%~ include('@form-fields', it) %>
<div class="actions"><button type="submit" name="button" value="save" class="primary"><%= it.t.consoleSave %></button></div>
</form>
<% if (it.rotatable) { %><h2 id="rotate-secret"><%= it.t.consoleRotateSecret %></h2>
<p><%= it.t.consoleRotateSecretHint %></p>
<form method="post" action="<%= it.base %>/admin/resources/<%= it.slug %>/<%= encodeURIComponent(it.name) %>/secret" aria-labelledby="rotate-secret">
<%~ include('@csrf', it) %>
<input type="hidden" name="etag" value="<%= it.etag %>">
<div class="actions"><button type="submit" name="button" value="rotate"><%= it.t.consoleRotateSecret %></button></div>
</form><% } %>
<h2 id="delete-resource"><%= it.t.consoleDeleteResource %></h2>
<p><%= it.t.consoleDeleteResourceHint %></p>
<form method="post" action="<%= it.base %>/admin/resources/<%= it.slug %>/<%= encodeURIComponent(it.name) %>/delete" aria-labelledby="delete-resource">
<%~ include('@csrf', it) %>
<input type="hidden" name="etag" value="<%= it.etag %>">
<div class="actions"><button type="submit" name="button" value="delete"><%= it.t.consoleDeleteResource %></button></div>
</form>
<% } else { %><p class="notice" role="note"><%= it.t.consoleResourceReadOnly %></p><% } %>`;

const KEYS = `<% layout('@console-layout', { title: it.t.consoleKeys }) %>
<h1><%= it.t.consoleKeys %></h1>
${NOTICE}
<table>
<caption><%= it.t.consoleKeysList %></caption>
<thead><tr><th scope="col">kid</th><th scope="col">alg</th><th scope="col"><%= it.t.consoleStatus %></th><th scope="col"><%= it.t.consoleActivates %></th><th scope="col"><%= it.t.consoleActions %></th></tr></thead>
<tbody>
<% it.keys.forEach(function (k) { %><tr><td><code><%= k.kid %></code></td><td><%= k.alg %></td><td><%= k.status %></td><td><%= k.activatesAt %></td><td><% if (k.retirable) { %><form method="post" action="<%= it.base %>/admin/keys/retire" class="inline">
<%~ include('@csrf', it) %>
<input type="hidden" name="kid" value="<%= k.kid %>">
<button type="submit" name="button" value="retire" aria-label="<%= it.f(it.t.consoleRetireLabel, { kid: k.kid }) %>"><%= it.t.consoleRetire %></button>
</form><% } %></td></tr>
<% }) %></tbody>
</table>
<h2 id="rotate-keys"><%= it.t.consoleRotateKeys %></h2>
<p><%= it.t.consoleRotateKeysHint %></p>
<form method="post" action="<%= it.base %>/admin/keys/rotate" aria-labelledby="rotate-keys">
<%~ include('@csrf', it) %>
<div class="actions"><button type="submit" name="button" value="rotate" class="primary"><%= it.t.consoleRotateKeys %></button></div>
</form>`;

const EVENTS = `<% layout('@console-layout', { title: it.t.consoleEvents }) %>
<h1><%= it.t.consoleEvents %></h1>
${NOTICE}
<form method="get" action="<%= it.base %>/admin/events" class="filters" aria-label="<%= it.t.consoleFilters %>">
<div><label for="type"><%= it.t.consoleEventType %></label>
<input type="text" id="type" name="type" value="<%= it.filters.type %>" maxlength="64" autocomplete="off" spellcheck="false"></div>
<div><label for="client_id">client_id</label>
<input type="text" id="client_id" name="client_id" value="<%= it.filters.client_id %>" maxlength="255" autocomplete="off" spellcheck="false"></div>
<div><label for="subject"><%= it.t.consoleSubject %></label>
<input type="text" id="subject" name="subject" value="<%= it.filters.subject %>" maxlength="255" autocomplete="off" spellcheck="false"></div>
<div class="actions"><button type="submit" class="primary"><%= it.t.consoleFilter %></button></div>
</form>
<table>
<caption><%= it.t.consoleEventsList %></caption>
<thead><tr><th scope="col"><%= it.t.consoleTime %></th><th scope="col"><%= it.t.consoleEventType %></th><th scope="col"><%= it.t.consoleClient %></th><th scope="col"><%= it.t.consoleUser %></th><th scope="col"><%= it.t.consoleDetails %></th></tr></thead>
<tbody>
<% it.events.forEach(function (e) { %><tr><td><%= e.time %></td><td><code><%= e.name %></code></td><td><% if (e.clientId) { %><a href="<%= it.base %>/admin/clients/<%= encodeURIComponent(e.clientId) %>"><%= e.clientName || e.clientId %></a><% if (e.clientName) { %> <code><%= e.clientId %></code><% } %><% } %></td><td><% if (e.subjectId) { %><% if (e.username) { %><a href="<%= it.base %>/admin/users/<%= encodeURIComponent(e.subjectId) %>"><%= e.username %></a><% } else { %><code><%= e.subjectId %></code><% } %><% } %></td><td><%= e.details %></td></tr>
<% }) %><% if (it.events.length === 0) { %><tr><td colspan="5"><%= it.t.consoleNone %></td></tr><% } %>
</tbody>
</table>
<% if (it.next) { %><p><a href="<%= it.next %>" rel="next"><%= it.t.consoleOlder %></a></p><% } %>`;

/** The console's templates by page name. */
export const CONSOLE_TEMPLATES: Readonly<Record<string, string>> = {
  'console-layout': LAYOUT,
  'console-users': USERS,
  'console-user': USER,
  'console-clients': CLIENTS,
  'console-client': CLIENT,
  'console-client-new': CLIENT_NEW,
  'console-client-delete': CLIENT_DELETE,
  'console-resources': RESOURCES,
  'console-resource-new': RESOURCE_NEW,
  'console-resource': RESOURCE,
  'console-keys': KEYS,
  'console-events': EVENTS,
};

/**
 * The console's style sheet, served at `/admin/console.css` after `/assets/sigil.css`: a wide
 * page instead of the sign-in card, the bar, tables, and the skip link shown on focus. Colours
 * are the pages' (WCAG 2.2 AA in both schemes).
 */
export const CONSOLE_STYLES = `
body.console { display: block; padding: 0; }
body.console main { width: calc(100% - 2rem); max-width: 64rem; margin: 1.5rem auto; padding: 1.5rem 1.75rem; }
body.console main:focus { outline: none; }
.skip { position: absolute; left: .5rem; top: -3rem; padding: .5rem 1rem; background: var(--card); color: var(--accent); border-radius: 8px; z-index: 1; }
.skip:focus { top: .5rem; }
.console-bar { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1.5rem; padding: .5rem 1.75rem; background: var(--card); border-bottom: 1px solid var(--line); }
.console-bar .brand { margin: 0; }
.console-bar .brand span { font-weight: 400; color: var(--muted); }
.console-bar nav { flex: 1 1 auto; }
.console-bar nav ul { list-style: none; display: flex; flex-wrap: wrap; gap: .25rem 1rem; margin: 0; padding: 0; }
.console-bar nav a { display: inline-block; padding: .6rem .25rem; color: var(--fg); text-decoration: none; border-bottom: 3px solid transparent; }
.console-bar nav a[aria-current=page] { border-bottom-color: var(--accent); font-weight: 600; }
.console-bar form.inline button { min-height: 2.75rem; }
table { width: 100%; border-collapse: collapse; margin: 1rem 0 1.5rem; font-size: .95rem; }
caption { text-align: left; font-weight: 600; padding: .25rem 0 .5rem; }
th, td { text-align: left; padding: .5rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; overflow-wrap: anywhere; }
th { color: var(--muted); font-weight: 600; overflow-wrap: normal; }
td:first-child { min-width: 5.5rem; }
td form.inline button { min-height: 2.25rem; padding: .25rem .75rem; }
textarea, select, input[type=search], input[type=email] { display: block; width: 100%; padding: .6rem .75rem; font: inherit; color: var(--fg); background: var(--card);
  border: 1px solid var(--field); border-radius: 8px; min-height: 2.75rem; }
textarea { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .9rem; }
textarea:focus-visible, select:focus-visible, input[type=search]:focus-visible, input[type=email]:focus-visible, input[type=text]:focus-visible,
  input[type=password]:focus-visible, input[type=checkbox]:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
fieldset { border: 1px solid var(--line); border-radius: 8px; margin: 1rem 0 0; padding: .25rem 1rem .75rem; }
legend { font-weight: 600; padding: 0 .25rem; }
form.row { display: flex; flex-wrap: wrap; align-items: flex-end; gap: .5rem 1rem; }
form.row label { flex: 1 0 100%; margin-bottom: 0; }
form.row input { flex: 1 1 16rem; width: auto; }
form.row button { flex: 0 0 auto; }
form.filters { display: grid; grid-template-columns: repeat(auto-fit, minmax(12rem, 1fr)); gap: 0 1rem; align-items: end; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .35rem 1rem; margin: 1rem 0; }
dt { font-weight: 600; }
dd { margin: 0; overflow-wrap: anywhere; }
@media (max-width: 40rem) { dl { grid-template-columns: minmax(0, 1fr); gap: 0; } dd { margin-bottom: .5rem; } }
.secret { border: 2px solid var(--accent); border-radius: 8px; padding: .5rem .75rem; margin: 1rem 0; }
.secret p { color: var(--fg); }
.field { margin: 0 0 .75rem; }
p.help, p.hint { margin: .25rem 0 0; color: var(--muted); font-size: .9rem; overflow-wrap: anywhere; }
main a.button { display: inline-flex; }
.actions a.button { margin-left: .5rem; }
`;
