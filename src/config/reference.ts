/**
 * The configuration reference, generated from the zod schema of schema.ts (the one source): the
 * JSON Schema that `sigil config schema` prints and the package ships (dist/sigil.schema.json),
 * and the Markdown of docs/configuration.md (`npm run docs:config`).
 */
import * as z from 'zod';
import { configSchema } from './schema.js';

/** Where the generated reference lives, relative to the package root. */
export const REFERENCE_FILE = 'docs/configuration.md';

/** The JSON Schema keywords of a string reference: `{ "$env": NAME }` or `{ "$file": PATH }` (loader.ts). */
const REFERENCE = {
  description: 'The value of an environment variable, or the content of a file (one trailing newline dropped)',
  oneOf: [
    {
      type: 'object',
      properties: { $env: { type: 'string', minLength: 1 } },
      required: ['$env'],
      additionalProperties: false,
    },
    {
      type: 'object',
      properties: { $file: { type: 'string', minLength: 1 } },
      required: ['$file'],
      additionalProperties: false,
    },
  ],
};

/** Annotations that stay on a field when its string type is widened to a reference. */
const ANNOTATIONS = new Set(['description', 'default', 'spec', 'title']);

type JsonSchema = Record<string, unknown>;

/**
 * The JSON Schema (draft 2020-12) of a config file as written (zod 4 `toJSONSchema`, input side:
 * defaults are annotations, fields with defaults are optional). Every string may also be written
 * as a reference (`$defs.reference`). Field descriptions and spec sections (`spec`) come from the
 * schema's `.meta()`.
 */
export function configJsonSchema(): JsonSchema {
  const schema = z.toJSONSchema(configSchema, {
    io: 'input',
    // Refinements and transforms check what JSON Schema cannot say; the shapes are all here.
    unrepresentable: 'any',
    override: ({ zodSchema, jsonSchema }) => {
      // zod leaves out the default of a field whose schema transforms (trustProxy, clients): add it.
      const def = zodSchema._zod.def;
      if (def.type === 'default' && jsonSchema.default === undefined)
        jsonSchema.default = (def as z.core.$ZodDefaultDef).defaultValue;
      if (jsonSchema.type !== 'string') return;
      const value: JsonSchema = {};
      for (const [key, v] of Object.entries(jsonSchema)) {
        if (ANNOTATIONS.has(key)) continue;
        value[key] = v;
        delete (jsonSchema as JsonSchema)[key];
      }
      jsonSchema.anyOf = [value, { $ref: '#/$defs/reference' }];
    },
  }) as JsonSchema;
  return {
    ...schema,
    title: 'Sigil configuration',
    $defs: { ...(schema.$defs as JsonSchema | undefined), reference: REFERENCE },
  };
}

/** A field's schema without the reference alternative that every string has. */
function unwrap(s: JsonSchema): JsonSchema {
  const anyOf = s.anyOf as JsonSchema[] | undefined;
  if (anyOf?.length === 2 && anyOf[1]?.$ref === '#/$defs/reference') return { ...s, ...anyOf[0], anyOf: undefined };
  return s;
}

/** A short type for the reference table: `string`, `integer (1–600)`, `"jwt" | "reference"`, `string[]`. */
function typeOf(raw: JsonSchema): string {
  const s = unwrap(raw);
  if (Array.isArray(s.enum)) return s.enum.map((v) => JSON.stringify(v)).join(' | ');
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (Array.isArray(s.anyOf)) return (s.anyOf as JsonSchema[]).map(typeOf).join(' or ');
  if (s.type === 'array') {
    const item = typeOf((s.items as JsonSchema | undefined) ?? {});
    return / \| | or /.test(item) ? `(${item})[]` : `${item}[]`;
  }
  if (s.type === 'object') return s.properties ? 'object' : 'map';
  if (s.type === 'integer' || s.type === 'number') {
    const min =
      (s.minimum as number | undefined) ??
      (s.exclusiveMinimum !== undefined ? (s.exclusiveMinimum as number) + 1 : undefined);
    const max =
      s.maximum !== undefined && (s.maximum as number) < Number.MAX_SAFE_INTEGER ? (s.maximum as number) : undefined;
    const range =
      min !== undefined && max !== undefined
        ? ` (${min}–${max})`
        : min !== undefined
          ? ` (≥ ${min})`
          : max !== undefined
            ? ` (≤ ${max})`
            : '';
    return `${String(s.type)}${range}`;
  }
  if (s.type === 'string' && typeof s.format === 'string') return `string (${s.format})`;
  return typeof s.type === 'string' ? s.type : 'any';
}

/** The object schema a field nests, if any: an object, an array of objects, or an object among alternatives. */
function nested(raw: JsonSchema): { schema: JsonSchema; suffix: string } | undefined {
  const s = unwrap(raw);
  if (s.type === 'object' && s.properties) return { schema: s, suffix: '.' };
  const items = s.items as JsonSchema | undefined;
  if (s.type === 'array' && items?.type === 'object' && items.properties) return { schema: items, suffix: '[].' };
  const object = (s.anyOf as JsonSchema[] | undefined)?.find((a) => a.type === 'object' && a.properties);
  return object ? { schema: object, suffix: '.' } : undefined;
}

/** Table-safe text: pipes escaped, line breaks joined. */
function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');
}

/** One row per field, depth first, with its nested fields after it. */
function rows(schema: JsonSchema, prefix: string): string[] {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required as string[] | undefined) ?? []);
  return Object.entries(properties).flatMap(([name, field]) => {
    const path = `${prefix}${name}`;
    const fallback =
      field.default !== undefined ? `\`${cell(JSON.stringify(field.default))}\`` : required.has(name) ? 'required' : '';
    const row = `| \`${path}\` | ${cell(typeOf(field))} | ${fallback} | ${cell(String(field.description ?? ''))} | ${cell(String(field.spec ?? ''))} |`;
    const inner = nested(field);
    return [row, ...(inner ? rows(inner.schema, `${path}${inner.suffix}`) : [])];
  });
}

/** The Markdown of docs/configuration.md: every field with its type, default, description and spec section. */
export function configReference(): string {
  return `<!-- Generated from src/config/schema.ts by \`npm run docs:config\`; do not edit by hand. -->
# Configuration reference

Sigil reads one config file: JSON, or YAML when its name ends in \`.yaml\`/\`.yml\`
(\`sigil start --config FILE\`, or \`SIGIL_CONFIG\`). Unknown fields are refused, and every problem
is reported with its field path; \`sigil config check FILE\` checks a file without starting. A
client's grant type that is neither built in nor a registered extension grant stops the start
with the closest known name ("did you mean").
Every lifetime is in seconds. Defaults are Duende IdentityServer's, except \`refreshTokenUsage\`
(\`oneTime\`, as RFC 9700 §4.14 recommends).

**Secrets outside the file.** Any string value may be written as \`{ "$env": "NAME" }\` (the
environment variable's value) or \`{ "$file": "/run/secrets/x" }\` (the file's content, one trailing
newline dropped), e.g. \`"clientSecret": { "$env": "UPSTREAM_SECRET" }\` or
\`"storage": { "$file": "/run/secrets/sigil-storage" }\`. An unset variable or an unreadable file
stops the start with exit code 2, naming the field path
(\`identityProviders[0].clientSecret: environment variable UPSTREAM_SECRET is not set\`); the value
itself never appears in a message or a log line.

**Editor support.** \`sigil config schema\` prints the JSON Schema of this file, which the package
also ships as \`dist/sigil.schema.json\`; a config may name it in \`"$schema"\`, e.g.
\`"$schema": "./node_modules/sigil/dist/sigil.schema.json"\`, for completion and checks.

This page lists every field, client fields included, with its type, default, meaning and spec
section. It is generated from the schema in \`src/config/schema.ts\` (\`npm run docs:config\`; a
test fails when it is stale), as is that JSON Schema. \`field[]\` is each element of a list.
"required" marks a field without default that must be given.

| field | type | default | meaning | spec |
|---|---|---|---|---|
${rows(configJsonSchema(), '').join('\n')}
`;
}
