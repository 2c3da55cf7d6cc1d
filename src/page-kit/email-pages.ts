/**
 * What the pages behind links sent by mail show (routes in ui/email-pages.ts): their templates
 * (Eta, auto-escaped like every page, see `pages.ts`; their texts are in the catalogues of
 * `locales/`).
 */
import { SHOW_PASSWORD_SCRIPT_TAG, showPasswordButton } from './show-password.js';

/**
 * A form of one of these pages: a title, an introduction, the errors, the fields and one button;
 * a link's handle travels in a hidden field, as does the pending sign-in the reset started from.
 * A field may have a hint (the password policy), tied to it by `aria-describedby`; a password
 * field has its "Show password" toggle.
 */
const FORM = `<% layout('@layout', { lang: it.lang, title: it.t[it.titleKey] }) %>
<h1><%= it.t[it.titleKey] %></h1>
<% if (it.introKey) { %><p><%= it.f(it.t[it.introKey], it.values || {}) %></p><% } %>
<% if (it.errors && it.errors.length > 0) { %><div class="alert" role="alert"><% it.errors.forEach(function (e) { %><p><%= e %></p><% }) %></div><% } %>
<form method="post" action="<%= it.action %>">
<input type="hidden" name="csrf_token" value="<%= it.csrf %>">
<% if (it.token) { %><input type="hidden" name="token" value="<%= it.token %>"><% } %>
<% if (it.interaction) { %><input type="hidden" name="interaction" value="<%= it.interaction %>"><% } %>
<% it.fields.forEach(function (field) { %><label for="<%= field.name %>"><%= it.t[field.labelKey] %></label>
<input type="<%= field.type %>" id="<%= field.name %>" name="<%= field.name %>" value="<%= field.value || '' %>" autocomplete="<%= field.autocomplete %>" autocapitalize="none" spellcheck="false" required<%= field.name === it.fields[0].name ? ' autofocus' : '' %><% if (field.hintKey) { %> aria-describedby="<%= field.name %>-hint"<% } %>>
<% if (field.type === 'password') { %>${showPasswordButton('field.name')}<% } %>
<% if (field.hintKey) { %><p id="<%= field.name %>-hint"><%= it.t[field.hintKey] %></p><% } %>
<% }) %><div class="actions"><button type="submit" class="primary"><%= it.t[it.buttonKey] %></button></div>
</form>
<% if (it.fields.some(function (field) { return field.type === 'password'; })) { %>${SHOW_PASSWORD_SCRIPT_TAG}<% } %>`;

/**
 * What happened, with a way to sign in when it helps: back into the pending sign-in of the
 * application that sent the user here (`it.interaction`, still live in this browser), else the
 * plain sign-in page.
 */
const DONE = `<% layout('@layout', { lang: it.lang, title: it.t[it.titleKey] }) %>
<h1><%= it.t[it.titleKey] %></h1>
<p><%= it.t[it.textKey] %></p>
<% if (it.signIn) { %><p><a href="<%= it.base %>/account/login<% if (it.interaction) { %>?interaction=<%= encodeURIComponent(it.interaction) %><% } %>"><%= it.t[it.interaction ? 'continueSignIn' : 'signIn'] %></a></p><% } %>`;

/** Templates by name, registered by the routes when config `email` is set (`@email-form`, `@email-done`). */
export const EMAIL_TEMPLATES: Readonly<Record<string, string>> = {
  'email-form': FORM,
  'email-done': DONE,
};
