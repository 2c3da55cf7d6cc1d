/**
 * What the self-service pages of the signed-in user show (routes in ui/account-self-service.ts):
 * their templates (Eta, auto-escaped like every page, see `pages.ts`; their texts are in the
 * catalogues of `locales/`).
 */
import { SHOW_PASSWORD_SCRIPT_TAG, showPasswordButton } from './show-password.js';

/** The way back to /account. */
const BACK = `<p><a href="<%= it.base %>/account"><%= it.t.accountBack %></a></p>`;

/** What the last change did. */
const NOTICE = `<% if (it.notice) { %><p class="notice" role="status"><%= it.notice %></p><% } %>`;

/** Why the password or profile cannot be changed here (config-file and external users). */
const READ_ONLY = `<% if (it.readOnly) { %><p class="notice" role="note" id="read-only"><%= it.readOnly %></p><% } %>`;

/**
 * A new password (`/account/password`), and the current one unless the sign-in is recent and
 * strong; or, at a sign-in with a temporary password an administrator set (`it.required`), the new
 * password the user must choose before going on (`/account/password/required`), without the way
 * back to /account (no session exists yet).
 */
const PASSWORD = `<% layout('@layout', { lang: it.lang, title: it.t.accountPasswordTitle }) %>
<h1><%= it.t.accountPasswordTitle %></h1>
${NOTICE}${READ_ONLY}
<% if (!it.readOnly) { %>
<% if (it.error) { %><p class="alert" role="alert" id="password-error"><%= it.error %></p><% } %>
<form method="post" action="<%= it.base %>/account/password<%= it.required ? '/required' : '' %>">
<input type="hidden" name="csrf_token" value="<%= it.csrf %>">
<% if (it.required) { %><p id="required-note"><%= it.t.passwordChangeRequired %></p><% } else if (it.recent) { %><p id="current-note"><%= it.t.currentPasswordOptional %></p><% } else { %>
<label for="current_password"><%= it.t.currentPassword %></label>
<input type="password" id="current_password" name="current_password" autocomplete="current-password" maxlength="256" required<% if (it.error) { %> aria-describedby="password-error"<% } %>>
${showPasswordButton("'current_password'")}
<% } %>
<label for="new_password"><%= it.t.newPassword %></label>
<input type="password" id="new_password" name="new_password" autocomplete="new-password" maxlength="256" required aria-describedby="password-hint<% if (it.error) { %> password-error<% } %>">
${showPasswordButton("'new_password'")}
<p id="password-hint"><%= it.t.passwordHint %></p>
<label for="confirm_password"><%= it.t.confirmPassword %></label>
<input type="password" id="confirm_password" name="confirm_password" autocomplete="new-password" maxlength="256" required>
${showPasswordButton("'confirm_password'")}
<div class="actions"><button type="submit" name="button" value="change" class="primary"><%= it.t.changePassword %></button></div>
</form>${SHOW_PASSWORD_SCRIPT_TAG}<% } %>
<% if (!it.required) { %>${BACK}<% } %>`;

/** The user's live sessions (`/account/sessions`), the others each with a button that ends it. */
const SESSIONS = `<% layout('@layout', { lang: it.lang, title: it.t.accountSessionsTitle }) %>
<h1><%= it.t.accountSessionsTitle %></h1>
${NOTICE}
<p id="sessions-intro"><%= it.t.sessionsIntro %></p>
<ul class="factors" aria-labelledby="sessions-intro">
<% it.sessions.forEach(function (s) { %><li><span><strong><%= s.device %></strong><% if (s.current) { %> (<%= it.t.sessionCurrent %>)<% } %>, <%= s.when %></span>
<% if (!s.current) { %><form method="post" action="<%= it.base %>/account/sessions/end" class="inline">
<input type="hidden" name="csrf_token" value="<%= it.csrf %>">
<input type="hidden" name="sid" value="<%= s.sid %>">
<button type="submit" name="button" value="end" aria-label="<%= s.label %>"><%= it.t.endSession %></button>
</form><% } %></li>
<% }) %></ul>
<% it.frames.forEach(function (src) { %><iframe hidden title="logout" src="<%= src %>"></iframe>
<% }) %>${BACK}`;

/** The clients holding a consent or refresh tokens (`/account/apps`), each revocable. */
const APPS = `<% layout('@layout', { lang: it.lang, title: it.t.accountAppsTitle }) %>
<h1><%= it.t.accountAppsTitle %></h1>
${NOTICE}
<% if (it.apps.length === 0) { %><p><%= it.t.appsNone %></p><% } else { %>
<p id="apps-intro"><%= it.t.appsIntro %></p>
<ul class="factors" aria-labelledby="apps-intro">
<% it.apps.forEach(function (a) { %><li><span><strong><%= a.name %></strong>: <%= a.detail %></span>
<form method="post" action="<%= it.base %>/account/apps/revoke" class="inline">
<input type="hidden" name="csrf_token" value="<%= it.csrf %>">
<input type="hidden" name="client_id" value="<%= a.clientId %>">
<button type="submit" name="button" value="revoke" aria-label="<%= a.label %>"><%= it.t.revokeApp %></button>
</form></li>
<% }) %></ul><% } %>
${BACK}`;

/** The editable claims (`/account/profile`). */
const PROFILE = `<% layout('@layout', { lang: it.lang, title: it.t.accountProfileTitle }) %>
<h1><%= it.t.accountProfileTitle %></h1>
${NOTICE}${READ_ONLY}
<% if (it.error) { %><p class="alert" role="alert"><%= it.error %></p><% } %>
<% if (it.fields.length === 0) { %><p><%= it.t.profileNoneEditable %></p><% } else { %>
<p id="profile-intro"><%= it.t.profileIntro %></p>
<form method="post" action="<%= it.base %>/account/profile">
<input type="hidden" name="csrf_token" value="<%= it.csrf %>">
<% it.fields.forEach(function (fd) { %><label for="claim-<%= fd.name %>"><%= fd.label %></label>
<input type="text" id="claim-<%= fd.name %>" name="<%= fd.name %>" value="<%= fd.value %>" maxlength="200"<% if (fd.autocomplete) { %> autocomplete="<%= fd.autocomplete %>"<% } %><% if (it.readOnly) { %> readonly<% } %><% if (fd.error) { %> aria-invalid="true" aria-describedby="error-<%= fd.name %>"<% } %>>
<% if (fd.error) { %><p class="alert" id="error-<%= fd.name %>"><%= fd.error %></p><% } %>
<% }) %><% if (!it.readOnly) { %><div class="actions"><button type="submit" name="button" value="save" class="primary"><%= it.t.saveProfile %></button></div><% } %>
</form><% } %>
${BACK}`;

/** Templates by name, registered by the routes (`@account-password`, `@account-sessions`, ...). */
export const SELF_SERVICE_TEMPLATES: Readonly<Record<string, string>> = {
  'account-password': PASSWORD,
  'account-sessions': SESSIONS,
  'account-apps': APPS,
  'account-profile': PROFILE,
};
