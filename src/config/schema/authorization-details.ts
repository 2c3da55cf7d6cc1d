/**
 * The authorization details types of API resources (RFC 9396 §2): each type's JSON Schema is
 * compiled with Ajv once, when the config (or a stored API resource) is read; a schema Ajv refuses
 * is a config error at its `schema` field, never a failure at request time.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import * as z from 'zod';

/** Most characters of one type name (RFC 9396 §2 leaves it open; an identifier or a URI). */
export const MAX_AUTHORIZATION_DETAILS_TYPE = 200;
/** Printable ASCII without spaces, as types are written in the RFC's examples and URIs. */
const TYPE_NAME = /^[\x21-\x7E]+$/;

// Strict about the schema itself (an unknown keyword or format is a typo the operator should
// see), lenient about styles Ajv's strict mode only warns of (types spelled across subschemas).
// Schemas are not registered by their `$id`: an edited stored schema keeping its `$id` compiles again.
const ajv = new Ajv({
  allErrors: false,
  strictSchema: true,
  strictTypes: false,
  strictTuples: false,
  addUsedSchema: false,
});
/** Compiled validators by the schema's JSON text: a stored resource saved again compiles nothing. */
const compiled = new Map<string, ValidateFunction>();

/**
 * The validator of one type's JSON Schema, compiled on first use of that schema text.
 * @throws Error (Ajv's message) when the schema is not one Ajv accepts.
 */
export function detailValidator(schema: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(schema);
  let validate = compiled.get(key);
  if (!validate) {
    validate = ajv.compile(schema);
    compiled.set(key, validate);
  }
  return validate;
}

/** One entry of an API resource's `authorizationDetailsTypes`. */
export const authorizationDetailsType = z
  .strictObject({
    type: z.string().min(1).max(MAX_AUTHORIZATION_DETAILS_TYPE).regex(TYPE_NAME).meta({
      description: 'The authorization details type (the `type` member of each object a client sends)',
      spec: 'RFC 9396 §2',
    }),
    schema: z.record(z.string(), z.unknown()).meta({
      description:
        'JSON Schema (draft-07, as Ajv reads it) each object of this type must satisfy, applied as written: set additionalProperties false to refuse unknown members; the format keyword is not supported',
      spec: 'RFC 9396 §5',
    }),
  })
  .superRefine((entry, ctx) => {
    try {
      detailValidator(entry.schema);
    } catch (err) {
      ctx.addIssue({
        code: 'custom',
        path: ['schema'],
        message: `not a JSON Schema Ajv accepts: ${err instanceof Error ? err.message : String(err)}`,
      });
    }
  });
