/** The pages' style sheet, served at `/assets/sigil.css` (same origin, so CSP `style-src 'self'`). */
export const STYLES = `
:root { color-scheme: light dark; --fg: #1b1f24; --muted: #57606a; --bg: #f6f8fa; --card: #fff; --line: #d0d7de;
  --accent: #0b5cad; --accent-fg: #fff; --danger: #b42318; --focus: #f59e0b; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #9da7b3; --bg: #0d1117; --card: #161b22;
  --line: #30363d; --accent: #4493f8; --accent-fg: #0d1117; --danger: #ff7b72; } }
* { box-sizing: border-box; }
body { margin: 0; min-height: 100vh; display: flex; align-items: center; justify-content: center; padding: 1rem;
  font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
main { width: 100%; max-width: 26rem; background: var(--card); border: 1px solid var(--line); border-radius: 12px;
  padding: 2rem 1.75rem; box-shadow: 0 1px 3px rgba(0,0,0,.06); }
.brand { font-weight: 700; letter-spacing: .02em; color: var(--accent); margin: 0 0 1.25rem; font-size: .95rem; }
h1 { font-size: 1.5rem; margin: 0 0 .5rem; }
p { margin: .25rem 0 1rem; color: var(--muted); }
label { display: block; font-weight: 600; margin: 1rem 0 .35rem; }
input[type=text], input[type=password] { width: 100%; padding: .65rem .75rem; font-size: 1rem; color: var(--fg);
  background: var(--card); border: 1px solid var(--line); border-radius: 8px; }
input:focus-visible, button:focus-visible, a:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.actions { display: flex; gap: .75rem; margin-top: 1.5rem; flex-wrap: wrap; }
button { flex: 1 1 8rem; padding: .7rem 1rem; font-size: 1rem; font-weight: 600; border-radius: 8px; cursor: pointer;
  border: 1px solid var(--line); background: var(--card); color: var(--fg); }
button.primary { background: var(--accent); border-color: var(--accent); color: var(--accent-fg); }
.alert { border: 1px solid var(--danger); color: var(--danger); border-radius: 8px; padding: .6rem .75rem; margin: 1rem 0 0; }
ul.scopes { list-style: none; padding: 0; margin: 1rem 0; }
ul.scopes li { padding: .55rem 0; border-bottom: 1px solid var(--line); }
.check { display: flex; gap: .5rem; align-items: center; font-weight: 400; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .95em; }
@media (max-width: 480px) { main { padding: 1.5rem 1.1rem; border-radius: 10px; } h1 { font-size: 1.3rem; } }
`;
