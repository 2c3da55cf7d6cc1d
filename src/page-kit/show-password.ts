/**
 * "Show password" on every page with a password field: a toggle button after the field, which the
 * page script (`/assets/password.js`, served by Sigil, so the CSP stays `script-src 'self'`)
 * reveals and wires up. Without JavaScript the button stays hidden and nothing else changes: the
 * field is a plain password field and the form signs in as before. The button keeps its label and
 * says whether the password shows with `aria-pressed` (WAI-ARIA 1.2, toggle button), so a screen
 * reader announces "Show password, toggle button, pressed".
 */

/**
 * The toggle for the password field whose id the Eta expression `idExpression` gives (after the
 * field, inside its form).
 */
export function showPasswordButton(idExpression: string): string {
  return `<button type="button" class="show-password" data-show-password aria-controls="<%= ${idExpression} %>" aria-pressed="false" hidden><%= it.t.showPassword %></button>`;
}

/** The script tag of a page that has a toggle. */
export const SHOW_PASSWORD_SCRIPT_TAG = '<script src="<%= it.base %>/assets/password.js"></script>';

/** The toggle's look: beside the field's start, small, never stretched like a form's buttons. */
export const SHOW_PASSWORD_STYLES = `button.show-password { flex: none; min-height: 2.75rem; margin-top: .35rem; padding: .35rem .75rem; font-weight: 500; }
button.show-password[aria-pressed=true] { border-color: var(--accent); }
`;

/**
 * The page script: each `[data-show-password]` button is shown, and a press switches its field
 * between `password` and `text`. Before the form is sent the field is a password field again, so
 * the browser's password manager sees what it expects.
 */
export const SHOW_PASSWORD_SCRIPT = `(function () {
  'use strict';
  document.querySelectorAll('[data-show-password]').forEach(function (button) {
    var field = document.getElementById(button.getAttribute('aria-controls'));
    if (!field) return;
    button.hidden = false;
    button.addEventListener('click', function () {
      var show = field.type === 'password';
      field.type = show ? 'text' : 'password';
      button.setAttribute('aria-pressed', show ? 'true' : 'false');
    });
    if (field.form) field.form.addEventListener('submit', function () {
      field.type = 'password';
      button.setAttribute('aria-pressed', 'false');
    });
  });
})();
`;
