/**
 * The look and language of the pages: the shipped catalogues are complete, a
 * deployment's catalogues (localesDir) merge over them and are checked at start, template
 * overrides keep the CSRF field and the escaping, the primary colour cannot inject CSS, and the
 * theme, logo and icon are served from content-addressed paths.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/loader.js';
import { configSchema } from '../../src/config/schema.js';
import { CATALOGUES, loadLocales, placeholders } from '../../src/page-kit/i18n.js';
import { DEFAULT_LOOK, loadLook, themeColours } from '../../src/page-kit/look.js';
import { Pages, templateProblems } from '../../src/page-kit/pages.js';
import { tempDir } from '../helpers.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});
/** A temp folder with files. */
function folder(files: Record<string, string | Buffer>): string {
  const { dir, cleanup } = tempDir();
  cleanups.push(cleanup);
  for (const [name, body] of Object.entries(files)) writeFileSync(join(dir, name), body);
  return dir;
}

describe('shipped catalogues', () => {
  const english = CATALOGUES.en as Record<string, string>;
  it('English, German, French and Spanish ship, each with every key of English, the same placeholders and no empty text', () => {
    expect(Object.keys(CATALOGUES)).toEqual(['en', 'de', 'fr', 'es']);
    for (const [lang, texts] of Object.entries(CATALOGUES)) {
      expect(Object.keys(texts).sort(), lang).toEqual(Object.keys(english).sort());
      for (const [key, text] of Object.entries(texts as Record<string, string>)) {
        expect(text.trim(), `${lang}.${key}`).not.toBe('');
        expect(placeholders(text), `${lang}.${key}`).toEqual(placeholders(english[key] as string));
      }
    }
  });
});

describe('localesDir', () => {
  it('adds a language, overrides single texts of a shipped one, and falls back to English for missing keys', () => {
    const dir = folder({
      'it.json': JSON.stringify({ signIn: 'Accedi', signInTo: 'Accedi per continuare su {client}' }),
      'fr.json': JSON.stringify({ signIn: 'Connexion !' }),
      'notes.txt': 'ignored',
    });
    const locales = loadLocales(dir);
    expect(locales.tags).toEqual(['en', 'de', 'fr', 'es', 'it']);
    expect(locales.pick('it-IT', undefined)).toBe('it');
    expect(locales.pick(undefined, 'it;q=0.9, en;q=0.5')).toBe('it');
    expect(locales.messages('it').signIn).toBe('Accedi');
    expect(locales.messages('it').password).toBe('Password');
    expect(locales.messages('fr').signIn).toBe('Connexion !');
    expect(locales.messages('fr').password).toBe('Mot de passe');
    expect(locales.messages('xx').signIn).toBe('Sign in');
  });

  it('refuses at start a file that is no JSON object of texts, an unknown key, other placeholders, an unreadable folder', () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ 'it.json': '{ not json' }, /it\.json is not valid JSON/],
      [{ 'it.json': '["a"]' }, /must be a JSON object/],
      [{ 'it.json': JSON.stringify({ signInn: 'x' }) }, /unknown key "signInn"/],
      [{ 'it.json': JSON.stringify({ signIn: 3 }) }, /"signIn" must be a string/],
      [
        { 'it.json': JSON.stringify({ signInTo: 'Accedi a {cliente}' }) },
        /"signInTo" must have the placeholders \{client\}/,
      ],
      [{ 'it.json': JSON.stringify({ signIn: 'Accedi {client}' }) }, /"signIn" must have the placeholders \(none\)/],
    ];
    for (const [files, message] of cases) expect(() => loadLocales(folder(files)), message.source).toThrow(message);
    expect(() => loadLocales('/nonexistent/locales')).toThrow(/cannot read \/nonexistent\/locales \(ENOENT\)/);
    expect(() => loadLook({ productName: 'X' }, '/nonexistent/locales')).toThrow(ConfigError);
  });
});

describe('localesDir, any content', () => {
  it('loads or refuses with a localesDir error, never anything else (property)', () => {
    const keys = fc.oneof(fc.constantFrom(...Object.keys(CATALOGUES.en as object)), fc.string({ maxLength: 12 }));
    const value = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.constantFrom('{client}', '{user} {x}'),
      fc.integer(),
      fc.constant(null),
    );
    fc.assert(
      fc.property(
        fc.oneof(
          fc.dictionary(keys, value, { maxKeys: 5 }).map((o) => JSON.stringify(o)),
          fc.string({ maxLength: 60 }),
        ),
        (text) => {
          const dir = folder({ 'it.json': text });
          try {
            const locales = loadLocales(dir);
            expect(locales.tags).toContain('it');
          } catch (err) {
            expect((err as Error).message).toMatch(/^localesDir: /);
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('page templates', () => {
  const override = (templates: Record<string, string>) =>
    new Pages({ ...DEFAULT_LOOK, templates: new Map(Object.entries(templates)) });
  const LOGIN_OK = `<% layout('@layout', { title: it.t.signInTitle }) %><h1>Acme</h1>
<form method="post" action="/account/login">
<%~ include('@csrf', it) %>
<input name="username"><button>Go</button></form>`;

  it('every built-in page passes the checks (Pages registers them all)', () => {
    expect(() => new Pages()).not.toThrow();
  });

  it('takes a correct override and renders it with the escaping and the CSRF field', () => {
    const pages = override({ login: LOGIN_OK });
    pages.checkOverrides();
    let html = '';
    const reply = {
      getHeader: () => undefined,
      header: () => reply,
      code: () => reply,
      type: () => reply,
      send: (b: string) => {
        html = b;
        return reply;
      },
    };
    pages.send(reply as never, 'login', 'en', { csrf: '<tok"en>' });
    expect(html).toContain('<input type="hidden" name="csrf_token" value="&lt;tok&quot;en&gt;">');
    expect(html).toContain('<h1>Acme</h1>');
  });

  it('refuses at start an override that drops the CSRF field, prints raw values, reaches around the escaping, does not compile, or names no page', () => {
    const refused: [Record<string, string>, RegExp][] = [
      [{ login: LOGIN_OK.replace("<%~ include('@csrf', it) %>", '') }, /login\.eta: a POST form without/],
      [{ login: LOGIN_OK.replace('<h1>Acme</h1>', '<h1><%~ it.username %></h1>') }, /raw output of "it.username"/],
      [{ login: LOGIN_OK.replace('<h1>Acme</h1>', '<h1><%_~ it.error _%></h1>') }, /raw output of "it.error"/],
      [
        { login: LOGIN_OK.replace('<h1>Acme</h1>', '<% this.config.autoEscape = false %>') },
        /reaches around the escaping/,
      ],
      [{ login: LOGIN_OK.replace('<h1>Acme</h1>', '<% __eta.res += it.username %>') }, /reaches around the escaping/],
      [{ login: LOGIN_OK.replace('<h1>Acme</h1>', '<% output(it.username) %>') }, /reaches around the escaping/],
      [{ login: LOGIN_OK.replace('</form>', '') }, /a <form> without its <\/form>/],
      [
        { login: LOGIN_OK.replace('<h1>Acme</h1>', "<%~ include('/etc/passwd', it) %>") },
        /must name a template as '@name'/,
      ],
      [{ login: LOGIN_OK.replace("layout('@layout'", 'layout(it.which') }, /must name a template as '@name'/],
      [{ login: LOGIN_OK.replace('<h1>Acme</h1>', '<% if (it.error { %>') }, /login\.eta/],
    ];
    for (const [templates, message] of refused) {
      expect(() => override(templates), message.source).toThrow(ConfigError);
      expect(() => override(templates), message.source).toThrow(message);
    }
    expect(() => override({ loign: LOGIN_OK }).checkOverrides()).toThrow(
      /loign\.eta: there is no page template "loign"/,
    );
    expect(() => override({ form_post: '<p>x</p>' }).checkOverrides()).toThrow(
      /the form_post template cannot be replaced/,
    );
    expect(() =>
      override({
        login: LOGIN_OK.replace('@csrf', '@csrff').replace('<form', '<div').replace('</form>', '</div>'),
      }).checkOverrides(),
    ).toThrow(/includes the unknown template "csrff"/);
  });

  it('reports every POST form without the CSRF field, whatever else the form holds (property)', () => {
    const inner = fc
      .string({ maxLength: 200 })
      .filter(
        (s) =>
          !s.includes('@csrf') &&
          !s.includes('csrf_token') &&
          !/<\/?form/i.test(s) &&
          !s.includes('%>') &&
          !s.includes('<%'),
      );
    fc.assert(
      fc.property(inner, fc.constantFrom('post', 'POST', '"post"', "'Post'"), (body, method) => {
        expect(templateProblems(`<form method=${method} action="/x">${body}</form>`)).toContain(
          "a POST form without <%~ include('@csrf', it) %>",
        );
        expect(
          templateProblems(`<form method=${method} action="/x"><%~ include('@csrf', it) %>${body}</form>`),
        ).toEqual([]);
      }),
    );
    fc.assert(fc.property(fc.string({ maxLength: 300 }), (source) => void templateProblems(source)));
  });
});

describe('primary colour', () => {
  const hex = fc.stringMatching(/^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/);
  const branding = (primaryColor: string) => configSchema.safeParse({ branding: { primaryColor } });

  it('takes #rgb and #rrggbb only: anything else is refused by the config and by themeColours (no CSS injection)', () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 40 }).filter((s) => !/^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/.test(s)),
        (value) => {
          expect(branding(value).success, value).toBe(false);
          expect(() => themeColours(value)).toThrow();
        },
      ),
    );
    for (const attack of [
      'red',
      '#fff;} body { display:none',
      '#0b5fff\n',
      'url(https://evil.example/x)',
      '#0b5fff !important',
    ])
      expect(branding(attack).success, attack).toBe(false);
  });

  it('puts the colour into the custom properties and picks the button text colour with the higher contrast (at least 4.5:1)', () => {
    const luminance = (c: string) => {
      const h = c.length === 4 ? c.slice(1).replace(/./g, '$&$&') : c.slice(1);
      const ch = (i: number) => {
        const v = parseInt(h.slice(i, i + 2), 16) / 255;
        return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
      };
      return 0.2126 * ch(0) + 0.7152 * ch(2) + 0.0722 * ch(4);
    };
    fc.assert(
      fc.property(hex, (colour) => {
        expect(branding(colour).success).toBe(true);
        const css = themeColours(colour);
        expect(css).toContain(`--accent: ${colour};`);
        const fg = /--accent-fg: (#fff|#000);/.exec(css)?.[1] as string;
        const [a, b] = [luminance(colour), luminance(fg === '#fff' ? '#ffffff' : '#000000')];
        expect((Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)).toBeGreaterThanOrEqual(4.5);
      }),
    );
  });
});

describe('loadLook', () => {
  it('serves the theme, the logo and the icon under content-hashed paths; an https logo adds only its origin to img-src', () => {
    const dir = folder({
      'theme.css': 'main { border-color: teal; }',
      'logo.svg': '<svg xmlns="http://www.w3.org/2000/svg"/>',
    });
    const look = loadLook(
      {
        productName: 'Acme ID',
        primaryColor: '#0b5fff',
        customCss: join(dir, 'theme.css'),
        logoUrl: join(dir, 'logo.svg'),
        faviconUrl: 'https://cdn.acme.example/brand/icon.png',
      },
      undefined,
    );
    expect(look.theme).toMatch(/^\/assets\/theme-[\w-]{22}\.css$/);
    const theme = look.assets.get(look.theme as string);
    expect(theme?.type).toBe('text/css; charset=utf-8');
    expect(theme?.body.toString()).toContain('--accent: #0b5fff;');
    expect(theme?.body.toString()).toContain('main { border-color: teal; }');
    expect(look.logo).toMatch(/^\/assets\/logo-[\w-]{22}\.svg$/);
    expect(look.assets.get(look.logo as string)?.type).toBe('image/svg+xml');
    expect(look.favicon).toBe('https://cdn.acme.example/brand/icon.png');
    expect(look.imageOrigins).toEqual(['https://cdn.acme.example']);
    // Another content, another path: a cached old theme is never served for the new one.
    writeFileSync(join(dir, 'theme.css'), 'main { border-color: navy; }');
    expect(loadLook({ productName: 'Acme ID', customCss: join(dir, 'theme.css') }, undefined).theme).not.toBe(
      look.theme,
    );
  });

  it('stops the start naming the setting and file when a file is missing, too large or of an unknown type', () => {
    const dir = folder({ 'logo.bmp': 'x', 'big.png': Buffer.alloc(600 * 1024) });
    mkdirSync(join(dir, 'templates'));
    const problems = (branding: Record<string, string>) => {
      try {
        loadLook({ productName: 'X', ...branding }, undefined);
        return [];
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as ConfigError).problems;
      }
    };
    expect(problems({ customCss: join(dir, 'missing.css') })).toEqual([
      `branding.customCss: cannot read ${join(dir, 'missing.css')} (ENOENT)`,
    ]);
    expect(problems({ logoUrl: join(dir, 'logo.bmp') })[0]).toMatch(/branding\.logoUrl: .*logo\.bmp is not a \.png/);
    expect(problems({ faviconUrl: join(dir, 'big.png') })[0]).toMatch(
      /branding\.faviconUrl: .*big\.png is larger than 524288 bytes/,
    );
    expect(problems({ templatesDir: join(dir, 'nope') })[0]).toMatch(/branding\.templatesDir: cannot read/);
    expect(problems({ templatesDir: join(dir, 'templates') })).toEqual([]);
  });

  it('the config refuses a logo over http or javascript:, and client page URIs that are not https (loopback http allowed)', () => {
    for (const logoUrl of ['http://cdn.example/logo.png', 'javascript:alert(1)', 'data:image/png;base64,AAAA'])
      expect(configSchema.safeParse({ branding: { logoUrl } }).success, logoUrl).toBe(false);
    const client = (extra: Record<string, string>) =>
      configSchema.safeParse({
        clients: [{ clientId: 'c', allowedGrantTypes: ['client_credentials'], clientSecrets: ['s'], ...extra }],
      }).success;
    for (const key of ['logoUri', 'clientUri', 'policyUri', 'tosUri']) {
      expect(client({ [key]: 'https://app.example/x' }), key).toBe(true);
      expect(client({ [key]: 'http://127.0.0.1:3000/x' }), key).toBe(true);
      expect(client({ [key]: 'http://app.example/x' }), key).toBe(false);
      expect(client({ [key]: 'javascript:alert(1)' }), key).toBe(false);
    }
  });
});
