/**
 * What the pages of multi-factor sign-in and /account show (routes in ui/account-mfa.ts): their
 * templates (Eta, auto-escaped like every page, see `pages.ts`; their texts are in the
 * catalogues of `locales/`).
 */

/** The second step after the password (`/account/mfa`): a one-time code, or cancel. */
const MFA = `<% layout('@layout', { lang: it.lang, title: it.t.mfaTitle }) %>
<h1><%= it.t.mfaTitle %></h1>
<p id="mfa-intro"><%= it.t.mfaIntro %></p>
<% if (it.error) { %><p class="alert" role="alert" id="mfa-error"><%= it.error %></p><% } %>
<form method="post" action="<%= it.base %>/account/mfa">
<%~ include('@csrf', it) %>
<% if (it.interaction) { %><input type="hidden" name="interaction" value="<%= it.interaction %>"><% } %>
<% if (it.returnTo) { %><input type="hidden" name="return" value="<%= it.returnTo %>"><% } %>
<label for="code"><%= it.t.oneTimeCode %></label>
<input type="text" id="code" name="code" inputmode="text" autocomplete="one-time-code" autocapitalize="none" spellcheck="false" maxlength="100" required autofocus aria-describedby="mfa-intro<% if (it.error) { %> mfa-error<% } %>"<% if (it.error) { %> aria-invalid="true"<% } %>>
<div class="actions">
<button type="submit" name="button" value="verify" class="primary"><%= it.t.verify %></button>
<button type="submit" name="button" value="cancel" formnovalidate><%= it.t.cancel %></button>
</div>
</form>`;

/** Adding an authenticator app (`/account/totp`): the QR code, the key as text, one code to confirm. */
const TOTP = `<% layout('@layout', { lang: it.lang, title: it.t.totpTitle }) %>
<h1><%= it.t.totpTitle %></h1>
<% if (it.required) { %><p role="note"><%= it.t.totpRequired %></p><% } %>
<p id="totp-intro"><%= it.t.totpIntro %></p>
<% if (it.error) { %><p class="alert" role="alert" id="totp-error"><%= it.error %></p><% } %>
<p class="qr"><img src="<%= it.qr %>" alt="<%= it.t.totpQrAlt %>" width="240" height="240"></p>
<p><span id="secret-label"><%= it.t.totpSecret %></span>: <code id="totp-secret" aria-labelledby="secret-label"><%= it.secret %></code></p>
<form method="post" action="<%= it.base %>/account/totp">
<%~ include('@csrf', it) %>
<% if (it.interaction) { %><input type="hidden" name="interaction" value="<%= it.interaction %>"><% } %>
<% if (it.returnTo) { %><input type="hidden" name="return" value="<%= it.returnTo %>"><% } %>
<label for="code"><%= it.t.oneTimeCode %></label>
<input type="text" id="code" name="code" inputmode="numeric" autocomplete="one-time-code" maxlength="10" pattern="[0-9 ]*" required autofocus aria-describedby="totp-intro<% if (it.error) { %> totp-error<% } %>"<% if (it.error) { %> aria-invalid="true"<% } %>>
<div class="actions"><button type="submit" name="button" value="confirm" class="primary"><%= it.t.activate %></button></div>
</form>`;

/** The recovery codes, shown once, and the way on. */
const RECOVERY = `<% layout('@layout', { lang: it.lang, title: it.t.recoveryTitle }) %>
<h1><%= it.t.recoveryTitle %></h1>
<p id="recovery-intro"><%= it.t.recoveryIntro %></p>
<ul class="codes" aria-labelledby="recovery-intro"><% it.codes.forEach(function (c) { %><li><code><%= c %></code></li><% }) %></ul>
<p><a class="button primary" href="<%= it.base %><%= it.next %>"><%= it.t.continue %></a></p>`;

/** The signed-in user's page (`/account`): second factors, recovery codes, the self-service pages. */
const ACCOUNT = `<% layout('@layout', { lang: it.lang, title: it.t.accountTitle }) %>
<h1><%= it.t.accountTitle %></h1>
<p><%= it.f(it.t.signedInAs, { user: it.username }) %></p>
<% if (it.notice) { %><p class="notice" role="status"><%= it.notice %></p><% } %>
<% if (it.email) { %><p><%= it.f(it.emailVerified ? it.t.accountEmailConfirmed : it.t.accountEmailUnconfirmed, { email: it.email }) %></p>
<% if (it.verifyEmail) { %><form method="post" action="<%= it.base %>/account/email/verify">
<%~ include('@csrf', it) %>
<button type="submit" name="button" value="send"><%= it.t.accountEmailSendLink %></button>
</form><% } %><% } %>
<% if (!it.canChange) { %><p class="notice" role="note"><%= it.t.freshSignInNeeded %> <a href="<%= it.base %><%= it.reauth %>"><%= it.t.signInAgain %></a></p><% } %>
<h2 id="factors-heading"><%= it.t.accountFactors %></h2>
<% if (it.factors.length === 0) { %><p><%= it.t.accountNoFactors %></p><% } else { %>
<ul class="factors" aria-labelledby="factors-heading">
<% it.factors.forEach(function (fa) { %><li><span><%= fa.name %>, <%= it.f(it.t.factorAdded, { date: fa.date }) %></span>
<% if (it.canChange) { %><form method="post" action="<%= it.base %>/account/factors/remove" class="inline">
<%~ include('@csrf', it) %>
<input type="hidden" name="factor" value="<%= fa.id %>">
<button type="submit" name="button" value="remove" aria-label="<%= it.f(it.t.removeFactor, { name: fa.name, date: fa.date }) %>"><%= it.t.remove %></button>
</form><% } %></li>
<% }) %></ul><% } %>
<% if (it.canChange) { it.adds.forEach(function (a) { %><p><a href="<%= it.base %><%= a.path %>"><%= a.label %></a></p><% }) } %>
<% if (it.hasSecond) { %><h2 id="recovery-heading"><%= it.t.factorRecoveryCodes %></h2>
<p><%= it.f(it.t.recoveryRemaining, { count: String(it.recoveryLeft) }) %></p>
<% if (it.canChange) { %><form method="post" action="<%= it.base %>/account/recovery">
<%~ include('@csrf', it) %>
<button type="submit" name="button" value="regenerate"><%= it.t.regenerateRecovery %></button>
</form><% } %><% } %>
<nav aria-labelledby="manage-heading"><h2 id="manage-heading"><%= it.t.accountManage %></h2>
<ul><li><a href="<%= it.base %>/account/password"><%= it.t.accountPasswordTitle %></a></li>
<li><a href="<%= it.base %>/account/sessions"><%= it.t.accountSessionsTitle %></a></li>
<li><a href="<%= it.base %>/account/apps"><%= it.t.accountAppsTitle %></a></li>
<li><a href="<%= it.base %>/account/profile"><%= it.t.accountProfileTitle %></a></li></ul></nav>
<p><a href="<%= it.base %>/account/logout"><%= it.t.signOut %></a></p>`;

/** Templates by name, registered by the routes (`@mfa`, `@totp`, `@recovery`, `@account`). */
export const ACCOUNT_TEMPLATES: Readonly<Record<string, string>> = {
  mfa: MFA,
  totp: TOTP,
  recovery: RECOVERY,
  account: ACCOUNT,
};
