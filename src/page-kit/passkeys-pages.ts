/**
 * What the passkey and security key pages show: their templates (Eta, auto-escaped
 * like every page, see `pages.ts`; their texts are in the catalogues of `locales/`), and the
 * small browser script that runs the WebAuthn ceremonies with `@simplewebauthn/browser`. Both scripts are
 * served by Sigil itself (`/assets/...`), so the CSP
 * stays `script-src 'self'`; the pages carry no inline script.
 */

const SCRIPTS = `<script src="<%= it.base %>/assets/webauthn-browser.js"></script>
<script src="<%= it.base %>/assets/passkeys.js"></script>`;

/**
 * The "Sign in with a passkey" form, included in the login page when WebAuthn is enabled. After a
 * refused passkey the page does not start the autofill request again by itself.
 */
const PASSKEY_LOGIN = `<form method="post" action="<%= it.base %>/account/passkeys/login" class="passkey" data-webauthn="login" data-options="<%= it.base %>/account/passkeys/login/options" data-autofill="<%= it.error === it.t.passkeyFailed ? 'false' : 'true' %>" data-error="<%= it.t.passkeyFailed %>">
<%~ include('@csrf', it) %>
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
<%~ include('@csrf', it) %>
<input type="hidden" name="id" value="<%= c.id %>">
<button type="submit" name="button" value="remove" aria-label="<%= c.removeLabel %>"><%= it.t.removeCredential %></button>
</form><% } %></li>
<% }) %></ul><% } %>
<% if (it.canChange) { %><form method="post" action="<%= it.base %>/account/passkeys/register" data-webauthn="register" data-options="<%= it.base %>/account/passkeys/options" data-error="<%= it.t.passkeyFailed %>">
<%~ include('@csrf', it) %>
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
<%~ include('@csrf', it) %>
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
