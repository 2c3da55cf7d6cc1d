/**
 * A stored client's settings as the console's form shows and reads them, derived from the config
 * schema of a client (`clientSchema`, its JSON Schema on the input side), so that every setting
 * the admin API accepts is a field, in the schema's order, with the schema's own description as
 * its help text. Only `clientId` (fixed once created) and `clientSecrets` (changed by rotation
 * only, as `ClientAdmin.update` says) are not fields. A form's values become a JSON Merge Patch
 * (RFC 7396) of the settings that differ from what the page showed; an emptied field is removed
 * (`null`), so its default applies again.
 */
import { isDeepStrictEqual } from 'node:util';
import * as z from 'zod';
import { clientSchema } from '../../config/schema/client.js';
import { BUILT_IN_GRANT_TYPES } from '../../config/schema/protocol.js';
import { single } from '../../http/fields.js';
import type { FormField, FormFieldOption } from '../../page-kit/form-fields.js';
import type { Messages } from '../../page-kit/i18n.js';
import type { Params } from '../../protocol/params.js';

/** How a setting is written in the form. */
type SettingKind =
  /** A boolean with a default: a checkbox. */
  | 'check'
  /** A boolean without one (its absence means something): not set, true or false. */
  | 'tristate'
  /** One of `options` (not set too, where the setting may be absent or null). */
  | 'choice'
  /** A whole number (seconds, for the lifetimes). */
  | 'number'
  /** A string. */
  | 'text'
  /** A list of strings, one per line. */
  | 'lines'
  /** A list of strings separated by spaces (scopes, as OAuth writes them: RFC 6749 §3.3). */
  | 'words'
  /** Several of `options`. */
  | 'checks'
  /** Anything else (objects, lists of objects), as JSON. */
  | 'json';

/** One setting of a stored client as the form has it. */
export interface ClientSetting {
  name: string;
  kind: SettingKind;
  /** The schema's description, in English. */
  description: string;
  /** The value in force when the setting is absent, if the schema gives one. */
  default?: unknown;
  /** Whether the form offers "not set" (a nullable or optional setting without a default). */
  unset: boolean;
  options: readonly string[];
  /** The longest value, characters. */
  max: number;
}

/** The settings the form leaves out: fixed once created, or changed by rotation only. */
const NOT_FIELDS = new Set(['clientId', 'clientSecrets']);
/** The most items a list setting takes from a form. */
const MAX_ITEMS = 50;
/** The longest JSON value, characters (a JWKS of a few keys). */
const MAX_JSON = 16_000;
/** The longest list field, characters. */
const MAX_LINES = 8000;
/** Settings whose label has a text of its own in the page's language; the others show their name only. */
const LABELS: Partial<Record<string, keyof Messages>> = {
  clientName: 'consoleName',
  allowedGrantTypes: 'consoleGrantTypes',
  allowedScopes: 'consoleScopes',
  redirectUris: 'consoleRedirectUris',
};

type JsonSchema = {
  type?: string | string[];
  anyOf?: JsonSchema[];
  enum?: unknown[];
  items?: JsonSchema;
  default?: unknown;
  description?: string;
  maxLength?: number;
};

/** A setting's kind and options, from its JSON Schema. */
function kindOf(name: string, schema: JsonSchema): { kind: SettingKind; options: readonly string[] } {
  const main = schema.anyOf?.find((s) => s.type !== 'null') ?? schema;
  const type = [main.type].flat().find((t) => t !== 'null');
  // Any grant type may be listed (an extension grant's too): the built-in ones are offered.
  if (name === 'allowedGrantTypes') return { kind: 'checks', options: BUILT_IN_GRANT_TYPES };
  if (name === 'allowedScopes') return { kind: 'words', options: [] };
  if (type === 'boolean') return { kind: schema.default === undefined ? 'tristate' : 'check', options: [] };
  if (type === 'string' && main.enum) return { kind: 'choice', options: main.enum.map(String) };
  if (type === 'integer') return { kind: 'number', options: [] };
  if (type === 'string') return { kind: 'text', options: [] };
  if (type === 'array' && main.items?.enum) return { kind: 'checks', options: main.items.enum.map(String) };
  if (type === 'array' && main.items?.type === 'string') return { kind: 'lines', options: [] };
  return { kind: 'json', options: [] };
}

/** Every setting of a client, in the schema's order. */
const ALL_SETTINGS: readonly ClientSetting[] = (() => {
  const schema = z.toJSONSchema(clientSchema, { io: 'input', unrepresentable: 'any' }) as {
    properties: Record<string, JsonSchema>;
  };
  return Object.entries(schema.properties).map(([name, s]) => {
    const { kind, options } = kindOf(name, s);
    const max =
      kind === 'json'
        ? MAX_JSON
        : kind === 'lines' || kind === 'words'
          ? MAX_LINES
          : kind === 'number'
            ? 10
            : (s.maxLength ?? 2048);
    return {
      name,
      kind,
      description: s.description ?? '',
      ...('default' in s ? { default: s.default } : {}),
      unset: s.default === undefined || s.default === null,
      options,
      max,
    };
  });
})();

/** The setting of `name`. */
function setting(name: string): ClientSetting {
  const found = ALL_SETTINGS.find((s) => s.name === name);
  if (!found) throw new Error(`no client setting ${name}`);
  return found;
}

/** Every editable setting of a stored client, in the schema's order. */
export const CLIENT_SETTINGS: readonly ClientSetting[] = ALL_SETTINGS.filter((s) => !NOT_FIELDS.has(s.name));

/** The settings the creation page asks for (the id among them); the client's page has the others. */
export const CREATION_SETTINGS: readonly ClientSetting[] = [
  'clientId',
  'clientName',
  'allowedGrantTypes',
  'redirectUris',
  'allowedScopes',
].map(setting);

/** A setting's form value: what the page shows (a checkbox's state, the checked options, or text). */
export type FormValue = string | boolean | readonly string[];

/** A setting's value in force as its field shows it: the stored value, else its default. */
export function shownValue(setting: ClientSetting, stored: unknown): FormValue {
  const value = stored === undefined ? setting.default : stored;
  switch (setting.kind) {
    case 'check':
      return value === true;
    case 'tristate':
      return typeof value === 'boolean' ? String(value) : '';
    case 'checks':
      return Array.isArray(value) ? value.map(String) : [];
    case 'lines':
    case 'words':
      return Array.isArray(value) ? value.map(String).join(setting.kind === 'lines' ? '\n' : ' ') : '';
    case 'json':
      return value === null || value === undefined ? '' : JSON.stringify(value, null, 2);
    default:
      return value === null || value === undefined ? '' : String(value);
  }
}

/**
 * A setting's form value as sent (bounded), before it is read as the setting. The form is the
 * whole of the settings: an absent field reads as an empty one (a form's empty field is not sent,
 * RFC 6749 §3.1 as `Params` reads it, and an unchecked checkbox never is).
 */
export function typedValue(setting: ClientSetting, form: Params): FormValue {
  if (setting.kind === 'check') return single(form, setting.name) === 'yes';
  if (setting.kind === 'checks') return form.getAll(setting.name).slice(0, MAX_ITEMS);
  return (single(form, setting.name) ?? '').slice(0, setting.max);
}

/**
 * A form value as the setting's value: `null` (removed, so the default applies) for an empty
 * field; `undefined` for JSON that does not parse. A number that is not one stays text, for the
 * config check to refuse with the field's name.
 */
function settingValue(setting: ClientSetting, typed: FormValue): unknown {
  if (typeof typed === 'boolean') return typed;
  if (Array.isArray(typed)) return typed.length === 0 && setting.unset ? null : typed;
  const text = (typed as string).trim();
  switch (setting.kind) {
    case 'lines':
    case 'words':
      return text
        .split(setting.kind === 'lines' ? /\r?\n/ : /\s+/)
        .map((s) => s.trim())
        .filter((s) => s.length > 0)
        .slice(0, MAX_ITEMS);
    case 'tristate':
      return text === '' ? null : text === 'true' ? true : text === 'false' ? false : text;
    case 'number':
      return text === '' ? null : /^\d{1,10}$/.test(text) ? Number(text) : text;
    case 'json':
      if (text === '') return null;
      try {
        return JSON.parse(text) as unknown;
      } catch {
        return undefined;
      }
    default:
      return text === '' ? null : text;
  }
}

/**
 * The merge patch of a submitted form against the client it was read from: each setting whose
 * value in force changes (an emptied one as `null`), and the settings whose JSON does not parse.
 */
export function patchOf(
  client: Record<string, unknown>,
  typed: Readonly<Record<string, FormValue>>,
  settings: readonly ClientSetting[] = CLIENT_SETTINGS,
): { patch: Record<string, unknown>; unreadable: string[] } {
  const patch: Record<string, unknown> = {};
  const unreadable: string[] = [];
  for (const setting of settings) {
    const form = typed[setting.name];
    if (form === undefined) continue;
    const value = settingValue(setting, form);
    if (value === undefined) {
      unreadable.push(setting.name);
      continue;
    }
    const inForce = (v: unknown) => (v === undefined || v === null ? (setting.default ?? null) : v);
    if (!isDeepStrictEqual(inForce(value), inForce(client[setting.name]))) patch[setting.name] = value;
  }
  return { patch, unreadable };
}

/** The hint of each kind that has one: how to write the value. */
const HINTS: Partial<Record<SettingKind, keyof Messages>> = {
  lines: 'consoleOnePerLine',
  words: 'consoleSpaceSeparated',
  json: 'consoleJsonValue',
};

/**
 * The fields of `settings` as `@form-fields` draws them, with `values` (a setting's form value)
 * and `errors` (a refused setting's message) in the page's language (`t`).
 */
export function settingFields(
  settings: readonly ClientSetting[],
  values: Readonly<Record<string, FormValue>>,
  errors: Readonly<Record<string, string>>,
  t: (key: keyof Messages) => string,
  lang: string,
): FormField[] {
  return settings.map((s) => {
    const label = LABELS[s.name];
    const hint = HINTS[s.kind] ?? (s.kind === 'number' && /seconds/.test(s.description) ? 'consoleSeconds' : undefined);
    const notSet: FormFieldOption[] = s.unset ? [{ value: '', text: t('consoleNotSet') }] : [];
    const options =
      s.kind === 'tristate'
        ? [...notSet, { value: 'true', text: 'true' }, { value: 'false', text: 'false' }]
        : [...(s.kind === 'choice' ? notSet : []), ...s.options.map((o) => ({ value: o, text: o }))];
    const value = values[s.name] ?? shownValue(s, undefined);
    // A client's own grant types (an extension grant's) are offered too, so that saving keeps them.
    const extra =
      s.kind === 'checks' && Array.isArray(value) ? value.filter((v: string) => !s.options.includes(v)) : [];
    return {
      name: s.name,
      type:
        s.kind === 'tristate' || s.kind === 'choice'
          ? 'choice'
          : s.kind === 'lines' || s.kind === 'json'
            ? 'textarea'
            : s.kind === 'words'
              ? 'text'
              : s.kind,
      label: label ? t(label) : '',
      code: s.name,
      help: s.description,
      ...(lang === 'en' ? {} : { helpLang: 'en' }),
      hint: hint && t(hint),
      max:
        s.kind === 'check' || s.kind === 'checks' || s.kind === 'choice' || s.kind === 'tristate' ? undefined : s.max,
      required: s.name === 'clientId',
      value,
      options: [...options, ...extra.map((v: string) => ({ value: v, text: v }))],
      error: errors[s.name],
    };
  });
}
