/**
 * The pages a browser sees, rendered with Eta with auto-escaping on: every value is
 * HTML-escaped; only the layout's body, itself a rendered template, is inserted raw. Each page
 * is sent uncached, unframeable (CSP `frame-ancestors 'none'`, `X-Frame-Options: DENY`).
 */
import { createHash } from 'node:crypto';
import { Eta } from 'eta';
import type { FastifyReply } from 'fastify';
import { ConfigError } from '../config/loader.js';
import { format, type Locales, type Messages } from './i18n.js';
import { DEFAULT_LOOK, type Look } from './look.js';
import { authorizationDetailsFragment } from './authorization-details-view.js';
import { FORM_FIELDS } from './form-fields.js';
import { PASSKEY_TEMPLATES } from './passkeys-pages.js';
import { SHOW_PASSWORD_SCRIPT_TAG, showPasswordButton } from './show-password.js';

/**
 * The layout of every page: the product name and logo (config `branding`), the icon, the style
 * sheets (built-in, then the theme), the page's body. The logo is decorative (`alt=""`): the
 * product name next to it says the same.
 */
const LAYOUT = `<!doctype html>
<html lang="<%= it.lang %>">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title><%= it.title %> · <%= it.brand.productName %></title>
<% if (it.brand.favicon) { %><link rel="icon" href="<%= it.brand.favicon %>">
<% } %><link rel="stylesheet" href="<%= it.base %>/assets/sigil.css">
<% if (it.brand.theme) { %><link rel="stylesheet" href="<%= it.brand.theme %>">
<% } %></head>
<body>
<main>
<p class="brand<%= it.brand.logo ? ' with-logo' : '' %>"><% if (it.brand.logo) { %><img src="<%= it.brand.logo %>" alt=""><% } %><%= it.brand.productName %></p>
<%~ it.body %>
</main>
</body>
</html>`;

/** The CSRF field every POST form carries (RFC 6749 §10.12), as the partial `@csrf`. */
const CSRF_FIELD = '<input type="hidden" name="csrf_token" value="<%= it.csrf %>">';
/** How a template includes the CSRF field (checked in every POST form of an overriding template). */
const CSRF_INCLUDE = "<%~ include('@csrf', it) %>";

const LOGIN = `<% layout('@layout', { lang: it.lang, title: it.t.signInTitle }) %>
<h1><%= it.t.signInTitle %></h1>
<% if (it.clientName) { %><p><%= it.f(it.t.signInTo, { client: it.clientName }) %></p><% } %>
<% if (it.tenant) { %><p><%= it.f(it.t.tenant, { tenant: it.tenant }) %></p><% } %>
<% if (it.error) { %><p class="alert" role="alert"><%= it.error %></p><% } %>
<form method="post" action="<%= it.base %>/account/login">
<%~ include('@csrf', it) %>
<% if (it.interaction) { %><input type="hidden" name="interaction" value="<%= it.interaction %>"><% } %>
<% if (it.uiLocales) { %><input type="hidden" name="ui_locales" value="<%= it.uiLocales %>"><% } %>
<% if (it.returnTo) { %><input type="hidden" name="return" value="<%= it.returnTo %>"><% } %>
<% if (it.step === 'identify') { %>
<label for="username"><%= it.t.usernameOrEmail %></label>
<input type="text" id="username" name="username" value="<%= it.username %>" autocomplete="<%= it.passkeys ? 'username webauthn' : 'username' %>" autocapitalize="none" spellcheck="false" required autofocus>
<div class="actions">
<button type="submit" name="button" value="next" class="primary"><%= it.t.next %></button>
<% } else if (it.step === 'password') { %>
<label for="username"><%= it.t.usernameOrEmail %></label>
<input type="text" id="username" name="username" value="<%= it.username %>" autocomplete="username" readonly>
<label for="password"><%= it.t.password %></label>
<input type="password" id="password" name="password" autocomplete="current-password" required autofocus>
${showPasswordButton("'password'")}
<div class="actions">
<button type="submit" name="button" value="login" class="primary"><%= it.t.signIn %></button>
<button type="submit" name="button" value="back" formnovalidate><%= it.t.otherAccount %></button>
<% } else { %>
<label for="username"><%= it.t.username %></label>
<input type="text" id="username" name="username" value="<%= it.username %>" autocomplete="<%= it.passkeys ? 'username webauthn' : 'username' %>" autocapitalize="none" spellcheck="false" required autofocus>
<label for="password"><%= it.t.password %></label>
<input type="password" id="password" name="password" autocomplete="current-password" required>
${showPasswordButton("'password'")}
<div class="actions">
<button type="submit" name="button" value="login" class="primary"><%= it.t.signIn %></button>
<% } %>
<button type="submit" name="button" value="cancel" formnovalidate><%= it.t.cancel %></button>
</div>
</form>
<% if (it.forgot || it.register) { %><p class="links"><% if (it.forgot) { %><a href="<%= it.base %>/account/forgot<% if (it.interaction) { %>?interaction=<%= encodeURIComponent(it.interaction) %><% } %>"><%= it.t.forgotPassword %></a><% } %><% if (it.forgot && it.register) { %> · <% } %><% if (it.register) { %><a href="<%= it.base %>/account/register"><%= it.t.registerTitle %></a><% } %></p><% } %>
<% if (it.step !== 'identify') { %>${SHOW_PASSWORD_SCRIPT_TAG}<% } %>
<% if (it.passkeys) { %><%~ include('@passkey-login', it) %><% } %>
<% if (it.providers && it.providers.length > 0) { %><p class="or"><%= it.t.orSignInWith %></p>
<ul class="providers"><% it.providers.forEach(function (p) { %><li><a class="provider" href="<%= it.base %><%= p.href %>"><%= p.label %></a></li><% }) %></ul><% } %>`;

/**
 * The consent page: the client's logo, name and pages (OIDC Dynamic Client Registration §2:
 * logo_uri, client_uri, policy_uri, tos_uri), who is signed in with a "not you?" button that
 * signs out and restarts the same request at the login page, and each scope's display name and
 * description.
 */
const CONSENT = `<% layout('@layout', { lang: it.lang, title: it.t.consentTitle }) %>
<% if (it.client.logoUri) { %><p class="client-logo"><img src="<%= it.client.logoUri %>" alt="<%= it.client.name %>"></p><% } %>
<h1><%= it.t.consentTitle %></h1>
<p class="signed-in"><%= it.f(it.t.consentSignedInAs, { user: it.user }) %> <button type="submit" form="consent" name="button" value="switch" class="link" formnovalidate><%= it.t.notYou %></button></p>
<p><%= it.f(it.t.consentIntro, { client: it.client.name }) %></p>
<% if (it.clientHost) { %><p class="notice" role="note"><%= it.f(it.t.consentClientHost, { host: it.clientHost }) %></p><% } %>
<% if (it.device) { %><p class="notice" role="note"><%= it.t.deviceWarning %></p><% } %>
<ul class="scopes">
<% it.scopes.forEach(function (s) { %><li><span><%= s.name %><% if (s.description) { %><small><%= s.description %></small><% } %></span></li><% }) %>
</ul>
${authorizationDetailsFragment('it.details')}
<% if (it.client.links.length > 0) { %><nav aria-label="<%= it.f(it.t.clientLinks, { client: it.client.name }) %>"><ul class="client-links"><% it.client.links.forEach(function (l) { %><li><a href="<%= l.href %>" rel="noopener"><%= it.f(it.t[l.key], { client: it.client.name }) %></a></li><% }) %></ul></nav><% } %>
<form method="post" action="<%= it.base %>/consent" id="consent">
<%~ include('@csrf', it) %>
<input type="hidden" name="interaction" value="<%= it.interaction %>">
<% if (it.canRemember) { %><label class="check"><input type="checkbox" name="remember" value="yes"> <%= it.t.remember %></label><% } %>
<div class="actions">
<button type="submit" name="button" value="yes" class="primary"><%= it.t.allow %></button>
<button type="submit" name="button" value="no"><%= it.t.deny %></button>
</div>
</form>`;

/**
 * A message or error page. An error page says what happened in plain words (`textKey`, one per
 * OAuth error code), names the code and the error id that the log line of the request carries,
 * and links back to the client's home page when it is known. A page may offer one way on
 * (`next`: a path below the issuer's and the text key of its link).
 */
const MESSAGE = `<% layout('@layout', { lang: it.lang, title: it.t[it.titleKey] }) %>
<h1><%= it.t[it.titleKey] %></h1>
<p><%= it.f(it.t[it.textKey], it.values || {}) %></p>
<% if (it.code) { %><p class="details"><%= it.t.errorCode %>: <code><%= it.code %></code><% if (it.description) { %> · <%= it.description %><% } %></p><% } %>
<% if (it.errorId) { %><p class="details"><%= it.t.errorId %>: <code><%= it.errorId %></code></p><% } %>
<% if (it.back) { %><p><a href="<%= it.back.href %>"><%= it.f(it.t.backTo, { client: it.back.name }) %></a></p><% } %>
<% if (it.next) { %><p><a href="<%= it.base %><%= it.next.path %>"><%= it.t[it.next.textKey] %></a></p><% } %>`;

const LOGOUT = `<% layout('@layout', { lang: it.lang, title: it.t.logoutTitle }) %>
<h1><%= it.t.logoutTitle %></h1>
<p><%= it.t.logoutQuestion %></p>
<form method="post" action="<%= it.base %>/account/logout">
<%~ include('@csrf', it) %>
<% Object.keys(it.fields || {}).forEach(function (name) { %><input type="hidden" name="<%= name %>" value="<%= it.fields[name] %>">
<% }) %><div class="actions"><button type="submit" name="button" value="logout" class="primary"><%= it.t.logout %></button></div>
</form>`;

const DEVICE = `<% layout('@layout', { lang: it.lang, title: it.t.deviceTitle }) %>
<h1><%= it.t.deviceTitle %></h1>
<p><%= it.t.deviceIntro %></p>
<% if (it.error) { %><p class="alert" role="alert"><%= it.error %></p><% } %>
<form method="post" action="<%= it.base %>/device">
<%~ include('@csrf', it) %>
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
  'function go(){if(!d&&a){d=true;location.replace(a.href)}}if(n===0){go();return}' +
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

/** Templates an override may not replace: the form_post page's script is allowed by its hash. */
const FIXED_TEMPLATES = new Set(['form_post', 'csrf']);

/**
 * The problems of a page template, checked for every page when it is registered, so that a
 * deployment's template (`branding.templatesDir`) keeps what the built-in pages guarantee:
 * - every POST form includes the CSRF field (`<%~ include('@csrf', it) %>`, or the field itself
 *   as `CSRF_FIELD` writes it; RFC 6749 §10.12);
 * - raw output (`<%~ ... %>`) only for `include('@name', it)` and the layout's `it.body`: every
 *   value is escaped, as Eta's `<%= %>` does;
 * - no code reaching around the escaping (`__eta`, `output(`, `this`), and includes of templates
 *   by name only (`'@name'`, never a file).
 * Templates are code that runs in Sigil: these checks catch mistakes, they do not sandbox.
 * @returns the problems, empty when there are none
 */
export function templateProblems(source: string): string[] {
  const problems: string[] = [];
  const forms = [...source.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)];
  if ((source.match(/<form\b/gi) ?? []).length !== forms.length) problems.push('a <form> without its </form>');
  for (const form of forms) {
    const post = /\bmethod\s*=\s*["']?post\b/i.test(form[1] ?? '');
    if (post && !(form[2] ?? '').includes(CSRF_INCLUDE) && !(form[2] ?? '').includes(CSRF_FIELD))
      problems.push(`a POST form without ${CSRF_INCLUDE}`);
  }
  for (const tag of source.matchAll(/<%([\s\S]*?)%>/g)) {
    const body = (tag[1] ?? '').replace(/^[-_]/, '').replace(/[-_]$/, '').trim();
    if (body.startsWith('~')) {
      const raw = body.slice(1).trim();
      if (!/^include\(\s*'@[a-z][\w-]*'\s*,\s*it\s*\)$/.test(raw) && raw !== 'it.body')
        problems.push(`raw output of "${raw}" (only include('@name', it) and it.body may be raw)`);
    }
    if (/__eta|\boutput\s*\(|\bthis\b/.test(body)) problems.push(`"${body.slice(0, 60)}" reaches around the escaping`);
    if (/\b(?:include|includeAsync|layout)\s*\((?!\s*'@[a-z][\w-]*'\s*[,)])/.test(body))
      problems.push(`"${body.slice(0, 60)}" must name a template as '@name' (no files)`);
  }
  return problems;
}

/**
 * Sets the reply's CSP to the app's policy (helmet) with `frame-src` naming exactly `frameSrc`
 * (front-channel logout iframes, OIDC Front-Channel Logout 1.0 §3), and `scriptSrc` as its script
 * directive when given (else no script at all).
 * @param frameSrc the CSP `frame-src` value (`frameSources` of logout/front-channel.ts)
 */
export function allowFrames(reply: FastifyReply, frameSrc: string, scriptSrc?: string): void {
  const base = String(reply.getHeader('content-security-policy') ?? "default-src 'self'; frame-ancestors 'none'");
  const kept = base
    .split(';')
    .map((d) => d.trim())
    .filter((d) => d !== '' && !/^(script-src|frame-src|child-src)\b/.test(d));
  reply.header(
    'content-security-policy',
    [...kept, ...(scriptSrc ? [scriptSrc] : []), `frame-src ${frameSrc}`].join('; '),
  );
}

/** Renders and sends pages. */
export class Pages {
  private readonly eta = new Eta({ autoEscape: true, cache: true });
  /** The languages and their texts. */
  readonly locales: Locales;
  /** The branding the pages show and the files served for it. */
  readonly look: Look;
  private readonly brand: {
    productName: string;
    logo?: string | undefined;
    favicon?: string | undefined;
    theme?: string | undefined;
  };
  private readonly overrides: ReadonlyMap<string, string>;
  private readonly overridden = new Set<string>();
  /**
   * Built-in templates checked but not compiled yet, by `@name`: all are compiled at the first
   * render. Compiling the fifty-odd pages took about 16 ms of every start. A deployment's own
   * templates are compiled when registered, so that a broken one stops the start.
   */
  private readonly uncompiled = new Map<string, string>();

  /**
   * @param look the branding, template overrides and catalogues (`loadLook`)
   * @param base the issuer's path, '' at the host's root (e.g. `/id`): every template reads it as
   *   `it.base` and starts its links, form actions and asset URLs with it, so the pages work where
   *   Sigil is mounted (OIDC Discovery §4: the issuer may have a path); the branding's own files
   *   (`/assets/…`) are served there too
   * @throws ConfigError when an override of a built-in template is broken (see `templateProblems`)
   */
  constructor(
    look: Look = DEFAULT_LOOK,
    readonly base = '',
  ) {
    this.look = look;
    this.locales = look.locales;
    const local = (src: string | undefined) => (src?.startsWith('/') ? `${base}${src}` : src);
    this.brand = {
      productName: look.productName,
      logo: local(look.logo),
      favicon: local(look.favicon),
      theme: local(look.theme),
    };
    this.overrides = look.templates;
    this.uncompiled.set('@csrf', CSRF_FIELD);
    this.uncompiled.set('@form_post', FORM_POST);
    this.uncompiled.set('@form-fields', FORM_FIELDS);
    this.register('layout', LAYOUT);
    this.register('login', LOGIN);
    this.register('consent', CONSENT);
    this.register('message', MESSAGE);
    this.register('logout', LOGOUT);
    this.register('device', DEVICE);
    this.register('signed_out', SIGNED_OUT);
    // Passkey and security key pages: src/page-kit/passkeys-pages.ts.
    for (const [name, template] of Object.entries(PASSKEY_TEMPLATES)) this.register(name, template);
  }

  /**
   * Adds a page template another module renders (e.g. the /account pages of ui/account-mfa.ts),
   * under the same layout, escaping and headers; a deployment's template of the same name
   * (`branding.templatesDir`) replaces it.
   * @param name the name `send` takes
   * @param template an Eta template using `layout('@layout', ...)`, `it.t` and `it.f`, its POST
   *   forms including `<%~ include('@csrf', it) %>`
   * @throws ConfigError when the deployment's template of that name is broken; Error when the
   *   built-in template itself is (a POST form without the CSRF field, raw output)
   */
  register(name: string, template: string): void {
    const override = FIXED_TEMPLATES.has(name) ? undefined : this.overrides.get(name);
    if (override === undefined) {
      const problems = templateProblems(template);
      if (problems.length > 0) throw new Error(`page template ${name}: ${problems.join('; ')}`);
      this.uncompiled.set(`@${name}`, template);
      return;
    }
    const problems = templateProblems(override);
    try {
      this.eta.loadTemplate(`@${name}`, override);
    } catch (err) {
      problems.push((err as Error).message.split('\n')[0] as string);
    }
    if (problems.length > 0) throw new ConfigError(problems.map((p) => `branding.templatesDir: ${name}.eta: ${p}`));
    this.overridden.add(name);
  }

  /** The template engine with every registered template compiled. */
  private compiled(): Eta {
    for (const [name, template] of this.uncompiled) this.eta.loadTemplate(name, template);
    this.uncompiled.clear();
    return this.eta;
  }

  /**
   * Checks, once every page is registered, that each template of `branding.templatesDir` replaced
   * a page and includes only known templates: a typo in a file name would otherwise go unnoticed,
   * a wrong include fail at request time.
   * @throws ConfigError listing the problems
   */
  checkOverrides(): void {
    const problems: string[] = [];
    for (const name of this.overrides.keys()) {
      if (FIXED_TEMPLATES.has(name)) problems.push(`${name}.eta: the ${name} template cannot be replaced`);
      else if (!this.overridden.has(name)) problems.push(`${name}.eta: there is no page template "${name}"`);
      for (const m of (this.overrides.get(name) ?? '').matchAll(/\b(?:include|layout)\(\s*'@([\w-]+)'/g))
        if (!this.eta.templatesSync.get(`@${m[1]}`) && !this.uncompiled.has(`@${m[1]}`))
          problems.push(`${name}.eta: includes the unknown template "${m[1]}"`);
    }
    if (problems.length > 0) throw new ConfigError(problems.map((p) => `branding.templatesDir: ${p}`));
  }

  /**
   * Sends a page.
   * @param name one of `login`, `consent`, `message`, `logout`, `device`, `passkeys`, `passkey-step`, or a
   *   name given to `register`
   * @param lang an available language (see `Locales.pick`)
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
    const html = this.compiled().render(`@${name}`, {
      ...data,
      lang,
      t: this.locales.messages(lang),
      f: format,
      brand: this.brand,
      base: this.base,
    });
    const csp = reply.getHeader('content-security-policy');
    if (leadsToClient && typeof csp === 'string')
      reply.header('content-security-policy', csp.replace(/form-action [^;]*;?/, ''));
    // `same-origin`, not `no-referrer`: under no-referrer browsers send `Origin: null` with the
    // page's own form posts, which the CSRF origin check (csrf.ts) refuses. Other origins still
    // get no referrer (and an `Origin: null` POST from them stays refused).
    return pageHeaders(reply)
      .header('referrer-policy', 'same-origin')
      .code(status)
      .type('text/html; charset=utf-8')
      .send(html);
  }

  /** One text of a language's catalogue. */
  text(lang: string, key: keyof Messages): string {
    return this.locales.messages(lang)[key];
  }

  /**
   * Sends the signed-out page (OIDC Front-Channel Logout 1.0 §3): one hidden iframe per URL of
   * `frames`, then, when `redirect` is given, on to it once they have loaded (script allowed by
   * hash; without script a "continue" link). Its CSP allows exactly `frameSrc` as frame sources.
   * @param frameSrc the CSP `frame-src` value for `frames`
   */
  sendSignedOut(
    reply: FastifyReply,
    lang: string,
    frames: readonly string[],
    frameSrc: string,
    redirect: string | undefined,
  ): FastifyReply {
    const html = this.compiled().render('@signed_out', {
      lang,
      t: this.locales.messages(lang),
      f: format,
      brand: this.brand,
      frames,
      redirect,
      base: this.base,
    });
    // The app's policy (helmet), with the script allowed by hash and the frames named.
    allowFrames(reply, frameSrc, `script-src ${SIGNED_OUT_SCRIPT_HASH}`);
    return pageHeaders(reply).header('referrer-policy', 'same-origin').type('text/html; charset=utf-8').send(html);
  }

  /**
   * Sends the Form Post Response Mode page (OAuth 2.0 Form Post Response Mode §2): an
   * auto-submitting form to the client's redirect URI, its script allowed by hash only.
   */
  sendFormPost(reply: FastifyReply, action: string, fields: Record<string, string>): FastifyReply {
    const html = this.compiled().render('@form_post', { action, fields });
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

/**
 * Adds an origin to the CSP `img-src` of the page about to be sent (a client's logo on the
 * consent page), keeping the rest of the policy.
 */
export function allowImagesFrom(reply: FastifyReply, origin: string): void {
  const csp = reply.getHeader('content-security-policy');
  if (typeof csp === 'string')
    reply.header('content-security-policy', csp.replace(/(^|;)\s*img-src ([^;]*)/, `$1img-src $2 ${origin}`));
}

/** The CSP source of a URI: its origin, or its scheme for a private-use scheme (`com.example.app:`). */
function sourceOf(uri: string): string {
  const url = new URL(uri);
  return url.origin === 'null' ? url.protocol : url.origin;
}

function pageHeaders(reply: FastifyReply): FastifyReply {
  return reply
    .header('cache-control', 'no-store')
    .header('pragma', 'no-cache')
    .header('referrer-policy', 'no-referrer');
}
