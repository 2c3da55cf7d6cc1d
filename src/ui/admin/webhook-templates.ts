/**
 * The console's webhook page templates (Eta, escaped by default; replaceable by name through
 * `branding.templatesDir` like every page): the list with the create form (a refused field marked
 * on the field, `aria-invalid` and its message by `aria-describedby`), and one webhook's page: the
 * generated secret when this answer created it (`it.secret`, shown this once), its settings, the
 * Ping, enable/disable and (stored webhooks only) delete and secret rotation forms, each carrying the version the page
 * was read at, and the delivery log with a Retry form per delivery that may be sent again.
 */
import { MAX_WEBHOOK_NAME, MAX_WEBHOOK_URL } from '../../config/schema/webhooks.js';
import { NOTICE } from './templates.js';

/** The attributes tying form field `field` (element `id`) to its refusal (`<id>-error`). */
export function described(id: string, field: string): string {
  return `<% if (it.fields && it.fields.${field}) { %> aria-describedby="${id}-error" aria-invalid="true"<% } %>`;
}

/** A refused field's message, next to it. */
export function fieldError(id: string, field: string): string {
  return `<% if (it.fields && it.fields.${field}) { %><p class="alert" id="${id}-error"><%= it.fields.${field} %></p><% } %>`;
}

const SOURCE = `<%= w.source === 'config' ? it.t.consoleSourceConfig : it.t.consoleSourceStore %>`;

const WEBHOOKS = `<% layout('@console-layout', { title: it.t.consoleWebhooks }) %>
<h1><%= it.t.consoleWebhooks %></h1>
${NOTICE}
<table>
<caption><%= it.t.consoleWebhooksList %></caption>
<thead><tr><th scope="col"><%= it.t.consoleName %></th><th scope="col">URL</th><th scope="col"><%= it.t.consoleWebhookEvents %></th><th scope="col"><%= it.t.consoleStatus %></th><th scope="col"><%= it.t.consoleSource %></th></tr></thead>
<tbody>
<% it.webhooks.forEach(function (w) { %><tr><td><a href="<%= it.base %>/admin/webhooks/<%= encodeURIComponent(w.name) %>"><%= w.name %></a></td><td><code><%= w.url %></code></td><td><%= w.events.join(', ') %></td><td><%= w.enabled ? it.t.consoleWebhookOn : it.t.consoleWebhookOff %></td><td>${SOURCE}</td></tr>
<% }) %><% if (it.webhooks.length === 0) { %><tr><td colspan="5"><%= it.t.consoleNone %></td></tr><% } %>
</tbody>
</table>
<h2 id="create-webhook"><%= it.t.consoleCreateWebhook %></h2>
<form method="post" action="<%= it.base %>/admin/webhooks" aria-labelledby="create-webhook">
<%~ include('@csrf', it) %>
<label for="webhook-name"><%= it.t.consoleName %></label>
<input type="text" id="webhook-name" name="name" value="<%= it.form.name || '' %>" maxlength="${MAX_WEBHOOK_NAME}" autocomplete="off" spellcheck="false" required${described('webhook-name', 'name')}>
${fieldError('webhook-name', 'name')}
<label for="webhook-url">URL</label>
<input type="url" id="webhook-url" name="url" value="<%= it.form.url || '' %>" maxlength="${MAX_WEBHOOK_URL}" autocomplete="off" spellcheck="false" required${described('webhook-url', 'url')}>
${fieldError('webhook-url', 'url')}
<fieldset${described('webhook-events', 'events')}><legend><%= it.t.consoleWebhookEvents %></legend>
<% it.eventChoices.forEach(function (e) { %><label class="check"><input type="checkbox" name="events" value="<%= e %>"<% if ((it.form.events || []).includes(e)) { %> checked<% } %>> <code><%= e %></code><% if (e === '*') { %> (<%= it.t.consoleWebhookAllEvents %>)<% } %></label>
<% }) %></fieldset>
${fieldError('webhook-events', 'events')}
<div class="actions"><button type="submit" name="button" value="create" class="primary"><%= it.t.consoleCreate %></button></div>
</form>`;

const WEBHOOK = `<% layout('@console-layout', { title: it.webhook.name }) %>
<% const w = it.webhook, at = it.base + '/admin/webhooks/' + encodeURIComponent(w.name) %>
<p><a href="<%= it.base %>/admin/webhooks"><%= it.t.consoleBackToWebhooks %></a></p>
<h1><%= w.name %></h1>
${NOTICE}
<% if (it.secret) { %><div class="secret" role="status"><p><strong><%= it.t.consoleWebhookSecretOnce %></strong></p><p><code id="webhook-secret"><%= it.secret %></code></p></div><% } %>
<dl>
<dt>URL</dt><dd><code><%= w.url %></code></dd>
<dt><%= it.t.consoleWebhookEvents %></dt><dd><%= w.events.join(', ') %></dd>
<dt><%= it.t.consoleStatus %></dt><dd><%= w.enabled ? it.t.consoleWebhookOn : it.t.consoleWebhookOff %><% if (w.disabled) { %> (<%= w.disabled.reason %>)<% } %></dd>
<dt><%= it.t.consoleSource %></dt><dd>${SOURCE}</dd>
</dl>
<% if (w.source === 'config') { %><p class="notice" role="note"><%= it.t.consoleWebhookReadOnly %></p><% } %>
<div class="actions">
<form method="post" action="<%= at %>/ping" class="inline">
<%~ include('@csrf', it) %>
<button type="submit" name="button" value="ping"<% if (!w.enabled) { %> disabled<% } %>><%= it.t.consoleWebhookPing %></button>
</form>
<form method="post" action="<%= at %>/enabled" class="inline">
<%~ include('@csrf', it) %>
<input type="hidden" name="etag" value="<%= w.etag %>">
<input type="hidden" name="enabled" value="<%= w.enabled ? 'false' : 'true' %>">
<button type="submit" name="button" value="enabled"><%= w.enabled ? it.t.consoleWebhookDisable : it.t.consoleWebhookEnable %></button>
</form>
<% if (w.source === 'store') { %><form method="post" action="<%= at %>/delete" class="inline">
<%~ include('@csrf', it) %>
<input type="hidden" name="etag" value="<%= w.etag %>">
<button type="submit" name="button" value="delete"><%= it.t.consoleWebhookDelete %></button>
</form><% } %>
</div>
<% if (w.source === 'store') { %><h2 id="rotate-secret"><%= it.t.consoleRotateSecret %></h2>
<p><%= it.t.consoleRotateSecretHint %></p>
<form method="post" action="<%= at %>/secret" aria-labelledby="rotate-secret">
<%~ include('@csrf', it) %>
<input type="hidden" name="etag" value="<%= w.etag %>">
<div class="actions"><button type="submit" name="button" value="rotate"><%= it.t.consoleRotateSecret %></button></div>
</form><% } %>
<h2 id="deliveries-heading"><%= it.t.consoleWebhookDeliveries %></h2>
<table aria-labelledby="deliveries-heading">
<thead><tr><th scope="col">ID</th><th scope="col"><%= it.t.consoleDeliveryType %></th><th scope="col"><%= it.t.consoleStatus %></th><th scope="col"><%= it.t.consoleDeliveryAttempts %></th><th scope="col"><%= it.t.consoleDeliveryLastCode %></th><th scope="col"><%= it.t.consoleDeliveryLastAttempt %></th><th scope="col"><%= it.t.consoleActions %></th></tr></thead>
<tbody>
<% it.deliveries.forEach(function (d) { %><tr><td><code><%= d.id %></code></td><td><code><%= d.type %></code></td><td><%= d.status %><% if (d.lastError) { %> (<%= d.lastError %>)<% } %></td><td><%= d.attempts %></td><td><%= d.lastStatusCode %></td><td><%= d.lastAttemptAt %></td><td><% if (d.retryable) { %><form method="post" action="<%= at %>/deliveries/<%= encodeURIComponent(d.id) %>/retry" class="inline">
<%~ include('@csrf', it) %>
<button type="submit" name="button" value="retry" aria-label="<%= it.f(it.t.consoleDeliveryRetryLabel, { id: d.id }) %>"><%= it.t.consoleDeliveryRetry %></button>
</form><% } %></td></tr>
<% }) %><% if (it.deliveries.length === 0) { %><tr><td colspan="7"><%= it.t.consoleNone %></td></tr><% } %>
</tbody>
</table>
<% if (it.next) { %><p><a href="<%= it.next %>" rel="next"><%= it.t.consoleOlderDeliveries %></a></p><% } %>`;

/** The webhook templates by page name. */
export const WEBHOOK_TEMPLATES: Readonly<Record<string, string>> = {
  'console-webhooks': WEBHOOKS,
  'console-webhook': WEBHOOK,
};
