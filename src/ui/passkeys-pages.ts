/**
 * What the passkey and security key pages show (issue 12): their templates (Eta, auto-escaped
 * like every page, see `pages.ts`), their texts in English and German (merged into the
 * catalogues of `i18n.ts`), and the small browser script that runs the WebAuthn ceremonies with
 * `@simplewebauthn/browser`. Both scripts are served by Sigil itself (`/assets/...`), so the CSP
 * stays `script-src 'self'`; the pages carry no inline script.
 */

/** English texts. */
export const PASSKEY_TEXTS_EN = {
  passkeysTitle: 'Passkeys and security keys',
  passkeysIntro: 'A passkey signs you in without a password. A security key protects your password as a second step.',
  passkeysList: 'Your passkeys and security keys',
  passkeysNone: 'You have no passkeys or security keys yet.',
  passkeyKindPasskey: 'Passkey',
  passkeyKindSecurityKey: 'Security key',
  passkeyCreated: 'added {date}',
  passkeyLastUsed: 'last used {date}',
  passkeyName: 'Name (optional)',
  addPasskey: 'Add a passkey',
  addSecurityKey: 'Add a security key',
  removeCredential: 'Remove',
  removeCredentialNamed: 'Remove {name}',
  passkeyRegistered: 'Added.',
  passkeyRemoved: 'Removed. It can no longer be used to sign in.',
  passkeyFailed: 'That did not work. Please try again.',
  passkeyNeedsScript: 'Passkeys and security keys need JavaScript and a browser that supports them.',
  passkeyReauth: 'For your security, sign in again before you change your passkeys and security keys.',
  signInAgain: 'Sign in again',
  notSignedIn: 'Please sign in first.',
  signInWithPasskey: 'Sign in with a passkey',
  securityKeyTitle: 'Use your security key',
  securityKeyIntro: 'Insert or touch your security key to finish signing in.',
  useSecurityKey: 'Use security key',
  // On /account and the security key step (MFA core, src/ui/account-mfa.ts).
  managePasskeys: 'Manage passkeys and security keys',
  useCodeInstead: 'Use a one-time code or a recovery code instead',
} as const;

/** German texts (the same keys). */
export const PASSKEY_TEXTS_DE: { [K in keyof typeof PASSKEY_TEXTS_EN]: string } = {
  passkeysTitle: 'Passkeys und Sicherheitsschlüssel',
  passkeysIntro: 'Mit einem Passkey melden Sie sich ohne Passwort an. Ein Sicherheitsschlüssel schützt Ihr Passwort als zweiter Schritt.',
  passkeysList: 'Ihre Passkeys und Sicherheitsschlüssel',
  passkeysNone: 'Sie haben noch keine Passkeys oder Sicherheitsschlüssel.',
  passkeyKindPasskey: 'Passkey',
  passkeyKindSecurityKey: 'Sicherheitsschlüssel',
  passkeyCreated: 'hinzugefügt am {date}',
  passkeyLastUsed: 'zuletzt verwendet am {date}',
  passkeyName: 'Name (optional)',
  addPasskey: 'Passkey hinzufügen',
  addSecurityKey: 'Sicherheitsschlüssel hinzufügen',
  removeCredential: 'Entfernen',
  removeCredentialNamed: '{name} entfernen',
  passkeyRegistered: 'Hinzugefügt.',
  passkeyRemoved: 'Entfernt. Er kann nicht mehr zur Anmeldung verwendet werden.',
  passkeyFailed: 'Das hat nicht funktioniert. Bitte versuchen Sie es erneut.',
  passkeyNeedsScript: 'Passkeys und Sicherheitsschlüssel benötigen JavaScript und einen Browser, der sie unterstützt.',
  passkeyReauth: 'Melden Sie sich zu Ihrer Sicherheit erneut an, bevor Sie Ihre Passkeys und Sicherheitsschlüssel ändern.',
  signInAgain: 'Erneut anmelden',
  notSignedIn: 'Bitte melden Sie sich zuerst an.',
  signInWithPasskey: 'Mit einem Passkey anmelden',
  securityKeyTitle: 'Sicherheitsschlüssel verwenden',
  securityKeyIntro: 'Stecken Sie Ihren Sicherheitsschlüssel ein oder berühren Sie ihn, um die Anmeldung abzuschließen.',
  useSecurityKey: 'Sicherheitsschlüssel verwenden',
  managePasskeys: 'Passkeys und Sicherheitsschlüssel verwalten',
  useCodeInstead: 'Stattdessen einen Einmalcode oder einen Wiederherstellungscode verwenden',
};

const SCRIPTS = `<script src="<%= it.base %>/assets/webauthn-browser.js"></script>
<script src="<%= it.base %>/assets/passkeys.js"></script>`;

/**
 * The "Sign in with a passkey" form, included in the login page when WebAuthn is enabled. After a
 * refused passkey the page does not start the autofill request again by itself.
 */
const PASSKEY_LOGIN = `<form method="post" action="<%= it.base %>/account/passkeys/login" class="passkey" data-webauthn="login" data-options="<%= it.base %>/account/passkeys/login/options" data-autofill="<%= it.error === it.t.passkeyFailed ? 'false' : 'true' %>" data-error="<%= it.t.passkeyFailed %>">
<input type="hidden" name="csrf_token" value="<%= it.csrf %>">
<% if (it.interaction) { %><input type="hidden" name="interaction" value="<%= it.interaction %>"><% } %>
<% if (it.uiLocales) { %><input type="hidden" name="ui_locales" value="<%= it.uiLocales %>"><% } %>
<input type="hidden" name="response" value="">
<p class="alert" role="alert" data-webauthn-error hidden></p>
<div class="actions"><button type="submit" name="button" value="passkey"><%= it.t.signInWithPasskey %></button></div>
</form>
${SCRIPTS}`;

/** The list of a user's credentials with add and remove forms (`/account/passkeys`). */
const PASSKEYS = `<% layout('@layout', { lang: it.lang, title: it.t.passkeysTitle }) %>
<h1><%= it.t.passkeysTitle %></h1>
<p><%= it.t.passkeysIntro %></p>
<% if (it.notice) { %><p class="notice" role="status"><%= it.notice %></p><% } %>
<% if (it.error) { %><p class="alert" role="alert"><%= it.error %></p><% } %>
<h2><%= it.t.passkeysList %></h2>
<% if (it.credentials.length === 0) { %><p><%= it.t.passkeysNone %></p><% } else { %>
<ul class="credentials">
<% it.credentials.forEach(function (c) { %><li><span><strong><%= c.name %></strong><br><%= c.details %></span>
<% if (it.canChange) { %><form method="post" action="<%= it.base %>/account/passkeys/remove">
<input type="hidden" name="csrf_token" value="<%= it.csrf %>">
<input type="hidden" name="id" value="<%= c.id %>">
<button type="submit" name="button" value="remove" aria-label="<%= c.removeLabel %>"><%= it.t.removeCredential %></button>
</form><% } %></li>
<% }) %></ul><% } %>
<% if (it.canChange) { %><form method="post" action="<%= it.base %>/account/passkeys/register" data-webauthn="register" data-options="<%= it.base %>/account/passkeys/options" data-error="<%= it.t.passkeyFailed %>">
<input type="hidden" name="csrf_token" value="<%= it.csrf %>">
<input type="hidden" name="response" value="">
<label for="name"><%= it.t.passkeyName %></label>
<input type="text" id="name" name="name" maxlength="100" autocomplete="off">
<p class="alert" role="alert" data-webauthn-error hidden></p>
<noscript><p><%= it.t.passkeyNeedsScript %></p></noscript>
<div class="actions">
<button type="submit" name="kind" value="passkey" class="primary"><%= it.t.addPasskey %></button>
<button type="submit" name="kind" value="security-key"><%= it.t.addSecurityKey %></button>
</div>
</form>
${SCRIPTS}<% } else { %><p><%= it.t.passkeyReauth %></p>
<p><a href="<%= it.base %>/account/login"><%= it.t.signInAgain %></a></p><% } %>`;

/** The security key step after the password. */
const PASSKEY_STEP = `<% layout('@layout', { lang: it.lang, title: it.t.securityKeyTitle }) %>
<h1><%= it.t.securityKeyTitle %></h1>
<p><%= it.t.securityKeyIntro %></p>
<% if (it.error) { %><p class="alert" role="alert"><%= it.error %></p><% } %>
<form method="post" action="<%= it.base %>/account/passkeys/second-factor" data-webauthn="second-factor" data-options="<%= it.base %>/account/passkeys/second-factor/options" data-error="<%= it.t.passkeyFailed %>">
<input type="hidden" name="csrf_token" value="<%= it.csrf %>">
<% if (it.uiLocales) { %><input type="hidden" name="ui_locales" value="<%= it.uiLocales %>"><% } %>
<input type="hidden" name="response" value="">
<p class="alert" role="alert" data-webauthn-error hidden></p>
<noscript><p><%= it.t.passkeyNeedsScript %></p></noscript>
<div class="actions">
<button type="submit" name="button" value="verify" class="primary" autofocus><%= it.t.useSecurityKey %></button>
<button type="submit" name="button" value="cancel" formnovalidate><%= it.t.cancel %></button>
</div>
</form>
<% if (it.codeLink) { %><p><a href="<%= it.base %><%= it.codeLink %>"><%= it.t.useCodeInstead %></a></p><% } %>
${SCRIPTS}`;

/** Templates by name, loaded by `Pages` (`@passkeys`, `@passkey-step`, `@passkey-login`). */
export const PASSKEY_TEMPLATES: Readonly<Record<string, string>> = {
  passkeys: PASSKEYS,
  'passkey-step': PASSKEY_STEP,
  'passkey-login': PASSKEY_LOGIN,
};

/** Style rules of these pages, appended to the style sheet. */
export const PASSKEY_STYLES = `
h2 { font-size: 1.125rem; margin: 1.5rem 0 .5rem; }
.notice { border: 1px solid var(--line); border-radius: 8px; padding: .6rem .75rem; color: var(--fg); }
ul.credentials { list-style: none; padding: 0; margin: 0 0 1rem; border-top: 1px solid var(--line); }
ul.credentials li { display: flex; gap: .75rem; align-items: center; justify-content: space-between; padding: .6rem 0; border-bottom: 1px solid var(--line); }
ul.credentials button { flex: none; }
form.passkey { margin-top: .5rem; }
`;

/**
 * The page script (`/assets/passkeys.js`), over the UMD bundle's global `SimpleWebAuthnBrowser`.
 * For each form marked `data-webauthn`: on submit, it posts the form (with the pressed button) to
 * `data-options` for the ceremony's options, runs the ceremony, puts the result as JSON in the
 * hidden `response` field and submits the form to the server. A `cancel` button submits as usual.
 * A form with `data-autofill="true"` also starts a conditional-mediation request when the browser
 * supports it (passkeys offered in the username field's autofill); a button press aborts it.
 */
export const PASSKEYS_SCRIPT = `(function () {
  'use strict';
  var W = window.SimpleWebAuthnBrowser;
  function showError(form) {
    var box = form.querySelector('[data-webauthn-error]');
    if (box) { box.textContent = form.getAttribute('data-error') || 'Error'; box.hidden = false; }
  }
  function fetchOptions(form, submitter) {
    var body = new URLSearchParams(new FormData(form, submitter || undefined));
    body.delete('response');
    return fetch(form.getAttribute('data-options'), {
      method: 'POST', body: body, credentials: 'same-origin', headers: { accept: 'application/json' }
    }).then(function (res) {
      if (!res.ok) throw new Error('options: HTTP ' + res.status);
      return res.json();
    });
  }
  function finish(form, submitter, result) {
    form.elements.namedItem('response').value = JSON.stringify(result);
    if (submitter && submitter.name) {
      var field = document.createElement('input');
      field.type = 'hidden'; field.name = submitter.name; field.value = submitter.value;
      form.appendChild(field);
    }
    form.submit();
  }
  function run(form, submitter, autofill) {
    var mode = form.getAttribute('data-webauthn');
    return fetchOptions(form, submitter).then(function (optionsJSON) {
      return mode === 'register'
        ? W.startRegistration({ optionsJSON: optionsJSON })
        : W.startAuthentication({ optionsJSON: optionsJSON, useBrowserAutofill: autofill });
    }).then(function (result) { finish(form, submitter, result); });
  }
  if (!W || !W.browserSupportsWebAuthn()) return;
  Array.prototype.forEach.call(document.querySelectorAll('form[data-webauthn]'), function (form) {
    form.addEventListener('submit', function (event) {
      if (event.submitter && event.submitter.value === 'cancel') return;
      event.preventDefault();
      run(form, event.submitter, false).catch(function () { showError(form); });
    });
    if (form.getAttribute('data-autofill') === 'true') {
      W.browserSupportsWebAuthnAutofill().then(function (supported) {
        if (supported) return run(form, null, true);
      }).catch(function () { /* aborted by a button press, or dismissed: nothing to show */ });
    }
  });
})();
`;
