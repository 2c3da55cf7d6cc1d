/**
 * The answers of the synchronous hooks (DESIGN §6b "Webhooks and hooks"), checked against JSON
 * Schemas with Ajv before anything of them is used: `{}` allows unchanged; `{ "deny": { "error":
 * "access_denied", "description" } }` denies; a preToken answer may add claims with
 * `{ "accessToken": { "claims": {…} }, "idToken": { "claims": {…} } }`. Anything else is a
 * malformed answer, which the caller treats as a failed call.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import type { HookName } from '../config/schema.js';
import { PROTOCOL_CLAIMS } from '../tokens/tokens.js';

/** The most claims one answer may add to one token. */
export const MAX_ADDED_CLAIMS = 50;
/** The longest denial description, characters. */
export const MAX_DENY_DESCRIPTION = 500;

/**
 * Claims a hook can never set, whatever it answers: DESIGN's list and every claim Sigil sets
 * itself (`PROTOCOL_CLAIMS`: also `idp`, `azp`, the hashes, the delegation and organization
 * claims). They are dropped from an answer silently; the rest of the answer stands.
 */
export const HOOK_PROTECTED_CLAIMS: ReadonlySet<string> = new Set([
  ...PROTOCOL_CLAIMS,
  ...['iss', 'sub', 'aud', 'exp', 'iat', 'nbf', 'jti', 'scope', 'client_id', 'cnf', 'org_id', 'acr', 'amr'],
  ...['auth_time', 'sid', 'nonce'],
]);

/** A denial as an answer gives it. */
export interface HookDenial {
  deny: {
    /** `access_denied`, the only error a hook may give (the client sees it, or `invalid_grant` at the token endpoint). */
    error?: 'access_denied';
    /** Shown to the client as `error_description` (or on the page); printable ASCII without `"` and `\`. */
    description?: string;
  };
}

/** What a `postLogin` or `preRegistration` hook answers: nothing (allow), or a denial. */
export type DenyAnswer = Partial<HookDenial>;

/** What a `preToken` hook answers: claims to add to either token, or a denial. */
export interface PreTokenAnswer extends Partial<HookDenial> {
  accessToken?: { claims?: Record<string, unknown> };
  idToken?: { claims?: Record<string, unknown> };
}

/** RFC 6749 §5.2: `error_description` is printable ASCII without `"` and `\`. */
const DESCRIPTION = {
  type: 'string',
  maxLength: MAX_DENY_DESCRIPTION,
  pattern: '^[\\x20\\x21\\x23-\\x5B\\x5D-\\x7E]*$',
};

const DENY = {
  type: 'object',
  additionalProperties: false,
  properties: { error: { const: 'access_denied' }, description: DESCRIPTION },
};

const CLAIMS = {
  type: 'object',
  additionalProperties: false,
  properties: {
    claims: {
      type: 'object',
      maxProperties: MAX_ADDED_CLAIMS,
      // `__proto__` would replace the prototype of the claims object it is copied into.
      propertyNames: { minLength: 1, maxLength: 100, not: { const: '__proto__' } },
    },
  },
};

const SCHEMAS = {
  preToken: {
    type: 'object',
    additionalProperties: false,
    properties: { deny: DENY, accessToken: CLAIMS, idToken: CLAIMS },
  },
  postLogin: { type: 'object', additionalProperties: false, properties: { deny: DENY } },
  preRegistration: { type: 'object', additionalProperties: false, properties: { deny: DENY } },
} satisfies Record<HookName, object>;

/**
 * The answers' validators, compiled at the first answer: Ajv's first compilation (its meta-schema)
 * took about 40 ms of every start, though most deployments call no hook.
 */
let validators:
  | {
      preToken: ValidateFunction<PreTokenAnswer>;
      postLogin: ValidateFunction<DenyAnswer>;
      preRegistration: ValidateFunction<DenyAnswer>;
    }
  | undefined;
function validatorsOf(): NonNullable<typeof validators> {
  if (!validators) {
    const ajv = new Ajv({ allErrors: false, strict: true });
    validators = {
      preToken: ajv.compile<PreTokenAnswer>(SCHEMAS.preToken),
      postLogin: ajv.compile<DenyAnswer>(SCHEMAS.postLogin),
      preRegistration: ajv.compile<DenyAnswer>(SCHEMAS.preRegistration),
    };
  }
  return validators;
}

/** A checked answer: allowed (with a preToken answer's added claims, protected ones dropped) or denied. */
export type CheckedAnswer =
  | { kind: 'allow'; accessToken: Record<string, unknown>; idToken: Record<string, unknown> }
  | { kind: 'deny'; description: string | undefined };

/**
 * Checks `answer` (parsed JSON, or what a function hook returned; `undefined` counts as `{}`)
 * against the schema of `hook`.
 * @returns the allowance or denial, or undefined when the answer is malformed (a failure)
 */
export function checkAnswer(hook: HookName, answer: unknown): CheckedAnswer | undefined {
  const value = answer ?? {};
  const validate = validatorsOf()[hook];
  if (!validate(value)) return undefined;
  const checked = value as PreTokenAnswer;
  if (checked.deny) return { kind: 'deny', description: checked.deny.description };
  return {
    kind: 'allow',
    accessToken: unprotected(checked.accessToken?.claims),
    idToken: unprotected(checked.idToken?.claims),
  };
}

/** `claims` without `HOOK_PROTECTED_CLAIMS` (and without `undefined` values). */
function unprotected(claims: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(claims ?? {}))
    if (!HOOK_PROTECTED_CLAIMS.has(name) && value !== undefined) out[name] = value;
  return out;
}
