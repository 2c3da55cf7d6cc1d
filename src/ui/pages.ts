/**
 * The pages a browser sees (DESIGN §6), rendered with Eta with auto-escaping on: every value is
 * HTML-escaped; only the layout's body, itself a rendered template, is inserted raw. Each page
 * is sent uncached, unframeable (CSP `frame-ancestors 'none'`, `X-Frame-Options: DENY`).
 */
import { createHash } from 'node:crypto';
import { Eta } from 'eta';
import type { FastifyReply } from 'fastify';
import { CATALOGUES, format, type Messages } from './i18n.js';
import { PASSKEY_TEMPLATES } from './passkeys-pages.js';

const LAYOUT = `<!doctype html>
<html lang="<%= it.lang %>">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title><%= it.title %> · Sigil</title>
<link rel="stylesheet" href="/assets/sigil.css">
</head>
<body>
<main>
<p class="brand">Sigil</p>
<%~ it.body %>
</main>
</body>
</html>`;

const LOGIN = `<% layout('@layout', { lang: it.lang, title: it.t.signInTitle }) %>
<h1><%= it.t.signInTitle %></h1>
<% if (it.clientName) { %><p><%= it.f(it.t.signInTo, { client: it.clientName }) %></p><% } %>
<% if (it.tenant) { %><p><%= it.f(it.t.tenant, { tenant: it.tenant }) %></p><% } %>
<% if (it.error) { %><p class="alert" role="alert"><%= it.error %></p><% } %>
<form method="post" action="/account/login">
<input type="hidden" name="csrf_token" value="<%= it.csrf %>">
<% if (it.interaction) { %><input type="hidden" name="interaction" value="<%= it.interaction %>"><% } %>
<% if (it.uiLocales) { %><input type="hidden" name="ui_locales" value="<%= it.uiLocales %>"><% } %>
<% if (it.toAccount) { %><input type="hidden" name="return" value="account"><% } %>
<label for="username"><%= it.t.username %></label>
<input type="text" id="username" name="username" value="<%= it.username %>" autocomplete="<%= it.passkeys ? 'username webauthn' : 'username' %>" autocapitalize="none" spellcheck="false" required autofocus>
<label for="password"><%= it.t.password %></label>
<input type="password" id="password" name="password" autocomplete="current-password" required>
<div class="actions">
<button type="submit" name="button" value="login" class="primary"><%= it.t.signIn %></button>
<button type="submit" name="button" value="cancel" formnovalidate><%= it.t.cancel %></button>
</div>
</form>
<% if (it.passkeys) { %><%~ include('@passkey-login', it) %><% } %>
<% if (it.providers && it.providers.length > 0) { %><p class="or"><%= it.t.orSignInWith %></p>
<ul class="providers"><% it.providers.forEach(function (p) { %><li><a class="provider" href="<%= p.href %>"><%= p.label %></a></li><% }) %></ul><% } %>`;

const CONSENT = `<% layout('@layout', { lang: it.lang, title: it.t.consentTitle }) %>
<h1><%= it.t.consentTitle %></h1>
<p><%= it.f(it.t.consentIntro, { client: it.clientName }) %></p>
<% if (it.device) { %><p class="alert" role="note"><%= it.t.deviceWarning %></p><% } %>
<ul class="scopes">
<% it.scopes.forEach(function (s) { %><li><%= s %></li><% }) %>
</ul>
<form method="post" action="/consent">
<input type="hidden" name="csrf_token" value="<%= it.csrf %>">
<input type="hidden" name="interaction" value="<%= it.interaction %>">
<% if (it.canRemember) { %><label class="check"><input type="checkbox" name="remember" value="yes"> <%= it.t.remember %></label><% } %>
<div class="actions">
<button type="submit" name="button" value="yes" class="primary"><%= it.t.allow %></button>
<button type="submit" name="button" value="no"><%= it.t.deny %></button>
</div>
</form>`;

const MESSAGE = `<% layout('@layout', { lang: it.lang, title: it.t[it.titleKey] }) %>
<h1><%= it.t[it.titleKey] %></h1>
<p><%= it.f(it.t[it.textKey], it.values || {}) %></p>
<% if (it.code) { %><p class="details"><%= it.t.errorCode %>: <code><%= it.code %></code><% if (it.description) { %> · <%= it.description %><% } %></p><% } %>`;

const LOGOUT = `<% layout('@layout', { lang: it.lang, title: it.t.logoutTitle }) %>
<h1><%= it.t.logoutTitle %></h1>
<p><%= it.t.logoutQuestion %></p>
<form method="post" action="/account/logout">
<input type="hidden" name="csrf_token" value="<%= it.csrf %>">
<% Object.keys(it.fields || {}).forEach(function (name) { %><input type="hidden" name="<%= name %>" value="<%= it.fields[name] %>">
<% }) %><div class="actions"><button type="submit" name="button" value="logout" class="primary"><%= it.t.logout %></button></div>
</form>`;

const DEVICE = `<% layout('@layout', { lang: it.lang, title: it.t.deviceTitle }) %>
<h1><%= it.t.deviceTitle %></h1>
<p><%= it.t.deviceIntro %></p>
<% if (it.error) { %><p class="alert" role="alert"><%= it.error %></p><% } %>
<form method="post" action="/device">
<input type="hidden" name="csrf_token" value="<%= it.csrf %>">
<label for="userCode"><%= it.t.userCode %></label>
<input type="text" id="userCode" name="userCode" value="<%= it.userCode %>" autocomplete="one-time-code" autocapitalize="characters" spellcheck="false" required autofocus>
<div class="actions"><button type="submit" name="button" value="submit" class="primary"><%= it.t.continue %></button></div>
</form>`;

/**
 * The signed-out page's script: once every front-channel logout iframe has loaded (or after 5 s),
 * the browser follows the "continue" link to the post-logout redirect URI, if there is one.
 */
const SIGNED_OUT_SCRIPT =
  "(function(){var a=document.getElementById('continue'),f=document.querySelectorAll('iframe'),n=f.length,d=false;" +
  "function go(){if(!d&&a){d=true;location.replace(a.href)}}if(n===0){go();return}" +
  "f.forEach(function(i){i.addEventListener('load',function(){if(--n===0)go()})});setTimeout(go,5000)})();";
const SIGNED_OUT_SCRIPT_HASH = `'sha256-${createHash('sha256').update(SIGNED_OUT_SCRIPT).digest('base64')}'`;
const SIGNED_OUT = `<% layout('@layout', { lang: it.lang, title: it.t.signedOutTitle }) %>
<h1><%= it.t.signedOutTitle %></h1>
<p><%= it.t.signedOut %></p>
<% if (it.redirect) { %><p><a id="continue" href="<%= it.redirect %>"><%= it.t.continue %></a></p><% } %>
<% it.frames.forEach(function (src) { %><iframe hidden title="logout" src="<%= src %>"></iframe>
<% }) %><% if (it.redirect) { %><script>${SIGNED_OUT_SCRIPT}</script><% } %>`;

/** The auto-submitting script of form_post; allowed by its hash, never by `unsafe-inline`. */
const FORM_POST_SCRIPT = 'document.forms[0].submit();';
const FORM_POST_SCRIPT_HASH = `'sha256-${createHash('sha256').update(FORM_POST_SCRIPT).digest('base64')}'`;
const FORM_POST = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Submit</title></head>
<body>
<form method="post" action="<%= it.action %>">
<% Object.keys(it.fields).forEach(function (name) { %><input type="hidden" name="<%= name %>" value="<%= it.fields[name] %>">
<% }) %><noscript><button type="submit">Continue</button></noscript>
</form>
<script>${FORM_POST_SCRIPT}</script>
</body></html>`;

/**
 * Sets the reply's CSP to the app's policy (helmet) with `frame-src` naming exactly `frameSrc`
 * (front-channel logout iframes, OIDC Front-Channel Logout 1.0 §3), and `scriptSrc` as its script
 * directive when given (else no script at all).
 * @param frameSrc the CSP `frame-src` value (`frameSources` of logout/front-channel.ts)
 */
export function allowFrames(reply: FastifyReply, frameSrc: string, scriptSrc?: string): void {
  const base = String(reply.getHeader('content-security-policy') ?? "default-src 'self'; frame-ancestors 'none'");
  const kept = base.split(';').map((d) => d.trim()).filter((d) => d !== '' && !/^(script-src|frame-src|child-src)\b/.test(d));
  reply.header('content-security-policy', [...kept, ...(scriptSrc ? [scriptSrc] : []), `frame-src ${frameSrc}`].join('; '));
}

/** Renders and sends pages. */
export class Pages {
  private readonly eta = new Eta({ autoEscape: true, cache: true });

  constructor() {
    this.eta.loadTemplate('@layout', LAYOUT);
    this.eta.loadTemplate('@login', LOGIN);
    this.eta.loadTemplate('@consent', CONSENT);
    this.eta.loadTemplate('@message', MESSAGE);
    this.eta.loadTemplate('@logout', LOGOUT);
    this.eta.loadTemplate('@device', DEVICE);
    this.eta.loadTemplate('@form_post', FORM_POST);
    this.eta.loadTemplate('@signed_out', SIGNED_OUT);
    // Passkey and security key pages (issue 12): src/ui/passkeys-pages.ts.
    for (const [name, template] of Object.entries(PASSKEY_TEMPLATES)) this.eta.loadTemplate(`@${name}`, template);
  }

  /**
   * Adds a page template another module renders (e.g. the /account pages of ui/account-mfa.ts),
   * under the same layout, escaping and headers.
   * @param name the name `send` takes
   * @param template an Eta template using `layout('@layout', ...)`, `it.t` and `it.f`
   */
  register(name: string, template: string): void {
    this.eta.loadTemplate(`@${name}`, template);
  }

  /**
   * Sends a page.
   * @param name one of `login`, `consent`, `message`, `logout`, `device`, `passkeys`, `passkey-step`, or a name given to `register`
   * @param lang a supported language (see `pickLocale`)
   * @param status HTTP status, 200 by default
   * @param leadsToClient the form's answer ends in a redirect to a client (login or consent of a
   *   pending authorization request): CSP `form-action` covers redirect chains in Chromium, so
   *   `'self'` would block the authorization response. Such pages carry no `form-action`: the
   *   client's redirect URI may itself redirect on (a federating provider sends the browser to its
   *   own client), to an origin no policy here can name.
   */
  send(
    reply: FastifyReply,
    name: string,
    lang: string,
    data: Record<string, unknown>,
    status = 200,
    leadsToClient = false,
  ): FastifyReply {
    const t: Messages = CATALOGUES[lang] ?? (CATALOGUES.en as Messages);
    const html = this.eta.render(`@${name}`, { ...data, lang, t, f: format });
    const csp = reply.getHeader('content-security-policy');
    if (leadsToClient && typeof csp === 'string') reply.header('content-security-policy', csp.replace(/form-action [^;]*;?/, ''));
    // `same-origin`, not `no-referrer`: under no-referrer browsers send `Origin: null` with the
    // page's own form posts, which the CSRF origin check (csrf.ts) refuses. Other origins still
    // get no referrer (and an `Origin: null` POST from them stays refused).
    return pageHeaders(reply).header('referrer-policy', 'same-origin').code(status).type('text/html; charset=utf-8').send(html);
  }

  /** One text of a language's catalogue. */
  text(lang: string, key: keyof Messages): string {
    return (CATALOGUES[lang] ?? (CATALOGUES.en as Messages))[key];
  }

  /**
   * Sends the signed-out page (OIDC Front-Channel Logout 1.0 §3): one hidden iframe per URL of
   * `frames`, then, when `redirect` is given, on to it once they have loaded (script allowed by
   * hash; without script a "continue" link). Its CSP allows exactly `frameSrc` as frame sources.
   * @param frameSrc the CSP `frame-src` value for `frames`
   */
  sendSignedOut(reply: FastifyReply, lang: string, frames: readonly string[], frameSrc: string, redirect: string | undefined): FastifyReply {
    const t: Messages = CATALOGUES[lang] ?? (CATALOGUES.en as Messages);
    const html = this.eta.render('@signed_out', { lang, t, f: format, frames, redirect });
    // The app's policy (helmet), with the script allowed by hash and the frames named.
    allowFrames(reply, frameSrc, `script-src ${SIGNED_OUT_SCRIPT_HASH}`);
    return pageHeaders(reply)
      .header('referrer-policy', 'same-origin')
      .type('text/html; charset=utf-8')
      .send(html);
  }

  /**
   * Sends the Form Post Response Mode page (OAuth 2.0 Form Post Response Mode §2): an
   * auto-submitting form to the client's redirect URI, its script allowed by hash only.
   */
  sendFormPost(reply: FastifyReply, action: string, fields: Record<string, string>): FastifyReply {
    const html = this.eta.render('@form_post', { action, fields });
    const formAction = sourceOf(action);
    return pageHeaders(reply)
      .header(
        'content-security-policy',
        `default-src 'none'; script-src ${FORM_POST_SCRIPT_HASH}; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
      )
      .type('text/html; charset=utf-8')
      .send(html);
  }
}

/** The CSP source of a URI: its origin, or its scheme for a private-use scheme (`com.example.app:`). */
function sourceOf(uri: string): string {
  const url = new URL(uri);
  return url.origin === 'null' ? url.protocol : url.origin;
}

function pageHeaders(reply: FastifyReply): FastifyReply {
  return reply.header('cache-control', 'no-store').header('pragma', 'no-cache').header('referrer-policy', 'no-referrer');
}
