import { PASSKEY_STYLES } from './passkeys-pages.js';
import { SHOW_PASSWORD_STYLES } from './show-password.js';

/**
 * Sigil's default mark, shown beside the product name until `branding.logoUrl` gives a logo: a
 * rounded seal with a keyhole cut out (an even-odd path), used as a mask so that it takes the
 * accent colour, and a brand's `primaryColor` with it. A data: URL, which CSP `img-src` allows.
 */
const LOGO_MASK = `url("data:image/svg+xml,${encodeURIComponent(
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><path fill-rule="evenodd" d="M6 0h12a6 6 0 0 1 6 6v12a6 6 0 0 1-6 6H6a6 6 0 0 1-6-6V6a6 6 0 0 1 6-6zM12 5.5a3.75 3.75 0 0 0-1.6 7.15L9.4 18.5h5.2l-1-5.85A3.75 3.75 0 0 0 12 5.5z"/></svg>',
)}")`;

/**
 * The pages' style sheet, served at `/assets/sigil.css` (same origin, so CSP `style-src 'self'`).
 * Colours meet WCAG 2.2 AA in light and dark schemes: text 4.5:1, field borders and the focus
 * ring 3:1 (1.4.11; the ring is the accent, so a brand's `primaryColor` colours it too, as the
 * buttons); every kind of text field looks alike; touch targets are at least 44px high; on phones
 * the card fills the screen.
 */
export const STYLES = `
:root { color-scheme: light dark; --fg: #1b1f24; --muted: #57606a; --bg: #f6f8fa; --card: #fff; --line: #d0d7de;
  --field: #848d97; --accent: #0b5cad; --accent-hover: #094c8f; --accent-fg: #fff; --danger: #b42318; --danger-bg: #fef3f2;
  --focus: var(--accent); --chip: #eef1f4; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #9da7b3; --bg: #0d1117; --card: #161b22;
  --line: #30363d; --field: #6e7681; --accent: #4493f8; --accent-hover: #6aa8fa; --accent-fg: #0d1117; --danger: #ff7b72;
  --danger-bg: #2d1214; --focus: var(--accent); --chip: #0d1117; } }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; text-size-adjust: 100%; }
body { margin: 0; min-height: 100vh; display: flex; align-items: center; justify-content: center; padding: 1.5rem 1rem;
  font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: var(--fg); background: var(--bg); }
main { width: 100%; max-width: 26rem; background: var(--card); border: 1px solid var(--line); border-radius: 12px;
  padding: 2rem 1.75rem; box-shadow: 0 1px 2px rgba(0,0,0,.04), 0 8px 24px rgba(0,0,0,.06); }
.brand { display: flex; align-items: center; gap: .5rem; font-weight: 700; letter-spacing: .02em; color: var(--fg);
  margin: 0 0 1.5rem; font-size: 1rem; }
.brand::before { content: ""; width: 1.5rem; height: 1.5rem; flex: none; background: var(--accent);
  -webkit-mask: ${LOGO_MASK} center / contain no-repeat; mask: ${LOGO_MASK} center / contain no-repeat; }
h1 { font-size: 1.5rem; line-height: 1.25; margin: 0 0 .5rem; }
p { margin: .25rem 0 1rem; color: var(--muted); }
label { display: block; font-weight: 600; margin: 1rem 0 .35rem; }
input:not([type]), input[type=text], input[type=password], input[type=email], input[type=search], input[type=url],
input[type=tel], input[type=number], input[type=date], select, textarea { display: block; width: 100%; min-height: 2.75rem; padding: .6rem .75rem; font: inherit;
  color: var(--fg); background: var(--card); border: 1px solid var(--field); border-radius: 8px; }
input:focus, select:focus, textarea:focus { border-color: var(--accent); }
input[type=checkbox], input[type=radio] { width: 1.25rem; height: 1.25rem; margin: 0; flex: none; accent-color: var(--accent); }
input:focus-visible, button:focus-visible, a:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.actions { display: flex; gap: .75rem; margin-top: 1.5rem; flex-wrap: wrap; }
button { flex: 1 1 8rem; min-height: 2.75rem; padding: .6rem 1rem; font: inherit; font-weight: 600; border-radius: 8px; cursor: pointer;
  border: 1px solid var(--field); background: var(--card); color: var(--fg); }
button:hover { background: var(--bg); }
button.primary { background: var(--accent); border-color: var(--accent); color: var(--accent-fg); }
button.primary:hover { background: var(--accent-hover); border-color: var(--accent-hover); }
a { color: var(--accent); }
.alert { border: 1px solid var(--danger); background: var(--danger-bg); color: var(--danger); border-radius: 8px;
  padding: .6rem .75rem; margin: 1rem 0 0; }
.notice { border: 1px solid var(--line); background: var(--chip); color: var(--fg); border-radius: 8px; padding: .6rem .75rem; margin: 1rem 0 0; }
ul.scopes { list-style: none; padding: 0; margin: 1rem 0; border-top: 1px solid var(--line); }
ul.scopes li { display: flex; gap: .65rem; align-items: baseline; padding: .6rem 0; border-bottom: 1px solid var(--line); }
ul.scopes li::before { content: "\\2713"; content: "\\2713" / ""; color: var(--accent); font-weight: 700; flex: none; }
.check { display: flex; gap: .6rem; align-items: center; font-weight: 400; min-height: 2.75rem; margin: .75rem 0 0; cursor: pointer; }
fieldset.choices { border: 0; padding: 0; margin: 1rem 0 0; min-width: 0; }
fieldset.choices legend { font-weight: 600; padding: 0; }
.or { margin: 1.5rem 0 .5rem; text-align: center; }
ul.providers { list-style: none; padding: 0; margin: 0; display: grid; gap: .5rem; }
a.provider { display: flex; align-items: center; justify-content: center; min-height: 2.75rem; padding: .6rem 1rem;
  border: 1px solid var(--field); border-radius: 8px; color: var(--fg); text-decoration: none; font-weight: 600; }
a.provider:hover { background: var(--bg); }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .9em; background: var(--chip);
  border-radius: 4px; padding: .1em .35em; overflow-wrap: anywhere; }
p.details { font-size: .95rem; border-left: 3px solid var(--line); padding-left: .75rem; overflow-wrap: anywhere; }
h2 { font-size: 1.125rem; line-height: 1.3; margin: 1.5rem 0 .5rem; }
p.qr { text-align: center; margin: 1rem 0; }
p.qr img { max-width: 100%; height: auto; background: #fff; border-radius: 8px; }
ul.codes { list-style: none; padding: 0; margin: 1rem 0; display: grid; grid-template-columns: repeat(2, 1fr); gap: .5rem; }
ul.codes code { font-size: 1rem; }
ul.factors { list-style: none; padding: 0; margin: .5rem 0 1rem; border-top: 1px solid var(--line); }
ul.factors li { display: flex; gap: .75rem; align-items: center; justify-content: space-between; padding: .5rem 0; border-bottom: 1px solid var(--line); }
form.inline { margin: 0; flex: none; }
form.inline button { flex: none; }
a.button { display: flex; align-items: center; justify-content: center; min-height: 2.75rem; padding: .6rem 1rem; border-radius: 8px;
  font-weight: 600; text-decoration: none; border: 1px solid var(--field); color: var(--fg); }
a.button.primary { background: var(--accent); border-color: var(--accent); color: var(--accent-fg); }
a.button.primary:hover { background: var(--accent-hover); }
/* Branding: a logo replaces the built-in mark; the consent page's client, user and scopes. */
.brand.with-logo::before { content: none; }
.brand img { max-height: 2rem; max-width: 10rem; width: auto; }
p.client-logo { margin: 0 0 1rem; }
p.client-logo img { max-height: 3rem; max-width: 12rem; width: auto; }
button.link { flex: none; min-height: 2.75rem; padding: 0 .25rem; border: 0; background: none; color: var(--accent);
  text-decoration: underline; font-weight: 400; }
button.link:hover { background: none; color: var(--accent-hover); }
ul.scopes li span { display: flex; flex-direction: column; }
ul.scopes small { color: var(--muted); font-size: .9rem; }
ul.client-links { list-style: none; padding: 0; margin: 0 0 1rem; display: flex; flex-wrap: wrap; gap: .25rem 1rem; }
ul.client-links a { display: inline-block; padding: .5rem 0; }
@media (max-width: 480px) {
  body { display: block; padding: 0; background: var(--card); }
  main { max-width: none; min-height: 100vh; border: 0; border-radius: 0; box-shadow: none; padding: 1.5rem 1.25rem 2rem; }
  h1 { font-size: 1.375rem; }
}
@media (forced-colors: active) { .brand::before { background: CanvasText; } ul.scopes li::before { color: CanvasText; } }
${/* passkey pages: src/page-kit/passkeys-pages.ts */ PASSKEY_STYLES}${/* src/page-kit/show-password.ts */ SHOW_PASSWORD_STYLES}`;
