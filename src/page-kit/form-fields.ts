/**
 * The one way a form of Sigil's pages draws its fields, as the partial `@form-fields` (included
 * with `<%~ include('@form-fields', it) %>` where `it.fields` lists them): a label, the control,
 * its help text, its hint and, when the field was refused, its message next to it. A refused
 * field is marked on the control itself: `aria-invalid="true"` and `aria-describedby` naming the
 * message (WCAG 2.2 SC 3.3.1), so a screen reader announces why when the field has the focus.
 */

/** How a field is drawn. */
export type FormFieldType =
  /** One line of text. */
  | 'text'
  /** A whole number (`inputmode="numeric"`). */
  | 'number'
  /** A write-only secret or a new password (never shown back). */
  | 'password'
  /** Several lines (one item per line, a JSON document). */
  | 'textarea'
  /** One checkbox: checked sends `yes`. */
  | 'check'
  /** A group of checkboxes of the same name, one per option. */
  | 'checks'
  /** A drop-down of the options. */
  | 'choice';

/** One option of a `choice` or `checks` field. */
export interface FormFieldOption {
  /** The value sent. */
  value: string;
  /** The text shown. */
  text: string;
}

/** One field as `@form-fields` draws it; every text is escaped there. */
export interface FormField {
  /** The form field's name, also its id's stem (`f-<name>`). */
  name: string;
  type: FormFieldType;
  /** The label, in the page's language. */
  label: string;
  /** A name shown after the label in code type (the setting's name in the config file and the API). */
  code?: string | undefined;
  /** What the field means (shown under it). */
  help?: string | undefined;
  /** The language of `help` when it is not the page's (BCP 47). */
  helpLang?: string | undefined;
  /** How to write it ("One per line."), in the page's language. */
  hint?: string | undefined;
  /** The longest value, characters. */
  max?: number | undefined;
  required?: boolean | undefined;
  /** The value shown: text, checked (`check`), or the checked options (`checks`). */
  value: string | boolean | readonly string[];
  options?: readonly FormFieldOption[] | undefined;
  /** Why the field was refused, in the page's language: shown next to it, the control marked invalid. */
  error?: string | undefined;
  /** `autocomplete` of a text or password field; default `off`. */
  autocomplete?: string | undefined;
}

/** The partial: each field of `it.fields` (`FormField`). */
export const FORM_FIELDS = `<% it.fields.forEach(function (fd) { var id = 'f-' + fd.name; var described = [fd.help ? id + '-help' : '', fd.hint ? id + '-hint' : '', fd.error ? id + '-error' : ''].filter(Boolean).join(' '); %>
<div class="field<%= fd.error ? ' invalid' : '' %>">
<% if (fd.type === 'check') { %><label class="check"><input type="checkbox" id="<%= id %>" name="<%= fd.name %>" value="yes"<% if (fd.value === true) { %> checked<% } %><% if (described) { %> aria-describedby="<%= described %>"<% } %><% if (fd.error) { %> aria-invalid="true"<% } %>> <%= fd.label %><% if (fd.code) { %> <code><%= fd.code %></code><% } %></label>
<% } else if (fd.type === 'checks') { %><fieldset id="<%= id %>"><legend><%= fd.label %><% if (fd.code) { %> <code><%= fd.code %></code><% } %></legend>
<% fd.options.forEach(function (o, i) { %><label class="check"><input type="checkbox" id="<%= id %>-<%= i %>" name="<%= fd.name %>" value="<%= o.value %>"<% if (fd.value.includes(o.value)) { %> checked<% } %><% if (described) { %> aria-describedby="<%= described %>"<% } %><% if (fd.error) { %> aria-invalid="true"<% } %>> <code><%= o.text %></code></label>
<% }) %></fieldset>
<% } else { %><label for="<%= id %>"><%= fd.label %><% if (fd.code) { %> <code><%= fd.code %></code><% } %></label>
<% if (fd.type === 'choice') { %><select id="<%= id %>" name="<%= fd.name %>"<% if (described) { %> aria-describedby="<%= described %>"<% } %><% if (fd.error) { %> aria-invalid="true"<% } %>>
<% fd.options.forEach(function (o) { %><option value="<%= o.value %>"<% if (fd.value === o.value) { %> selected<% } %>><%= o.text %></option>
<% }) %></select>
<% } else if (fd.type === 'textarea') { %><textarea id="<%= id %>" name="<%= fd.name %>" rows="<%= Math.min(8, Math.max(3, String(fd.value).split('\\n').length + 1)) %>"<% if (fd.max) { %> maxlength="<%= fd.max %>"<% } %> spellcheck="false"<% if (fd.required) { %> required<% } %><% if (described) { %> aria-describedby="<%= described %>"<% } %><% if (fd.error) { %> aria-invalid="true"<% } %>><%= fd.value %></textarea>
<% } else { %><input type="<%= fd.type === 'password' ? 'password' : 'text' %>" id="<%= id %>" name="<%= fd.name %>" value="<%= fd.type === 'password' ? '' : fd.value %>"<% if (fd.type === 'number') { %> inputmode="numeric"<% } %><% if (fd.max) { %> maxlength="<%= fd.max %>"<% } %> autocomplete="<%= fd.autocomplete || (fd.type === 'password' ? 'new-password' : 'off') %>" spellcheck="false"<% if (fd.required) { %> required<% } %><% if (described) { %> aria-describedby="<%= described %>"<% } %><% if (fd.error) { %> aria-invalid="true"<% } %>>
<% } %><% } %><% if (fd.help) { %><p class="help" id="<%= id %>-help"<% if (fd.helpLang) { %> lang="<%= fd.helpLang %>"<% } %>><%= fd.help %></p>
<% } %><% if (fd.hint) { %><p class="hint" id="<%= id %>-hint"><%= fd.hint %></p>
<% } %><% if (fd.error) { %><p class="alert" id="<%= id %>-error"><%= fd.error %></p>
<% } %></div>
<% }) %>`;
