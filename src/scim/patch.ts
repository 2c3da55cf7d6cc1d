/**
 * SCIM PATCH (RFC 7644 §3.5.2): `add`, `remove` and `replace` operations applied in order to the
 * JSON representation of one resource, in memory. The result is then validated and written like
 * a PUT, so that a PATCH is all or nothing (§3.5.2: "the operations are applied in sequence... if
 * any fails, the resource is not changed").
 */
import { matches, parsePatchPath, ScimError, type PatchPath } from '../protocol/scim-filter.js';
import { type AttributeDefinition, definitionOf, PATCH_OP } from './schemas.js';

/** Most operations in one PATCH request. */
export const MAX_OPERATIONS = 100;

type Json = Record<string, unknown>;

function bad(
  scimType: 'invalidSyntax' | 'invalidPath' | 'invalidValue' | 'noTarget' | 'mutability',
  detail: string,
): ScimError {
  return new ScimError(400, detail, scimType);
}

/**
 * Applies a PatchOp body to `resource` (not changed; a changed copy is returned).
 * @param attributes the resource type's attribute definitions (paths are checked against them)
 * @param schema the resource's core schema URI (a path may be qualified with it)
 * @throws ScimError 400 `invalidSyntax` (not a PatchOp, unknown op, missing value), `invalidPath`
 *   (a path that names no attribute), `noTarget` (remove without path, a value filter matching
 *   nothing), `mutability` (a read-only attribute), `invalidValue` (a value of the wrong shape).
 */
export function applyPatch(
  resource: Json,
  body: unknown,
  attributes: readonly AttributeDefinition[],
  schema: string,
): Json {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw bad('invalidSyntax', 'the body must be a PatchOp object');
  const { schemas, Operations } = body as { schemas?: unknown; Operations?: unknown };
  if (!Array.isArray(schemas) || !schemas.includes(PATCH_OP))
    throw bad('invalidSyntax', `schemas must list ${PATCH_OP}`);
  if (!Array.isArray(Operations) || Operations.length === 0)
    throw bad('invalidSyntax', 'Operations must be a non-empty array');
  if (Operations.length > MAX_OPERATIONS)
    throw bad('invalidSyntax', `at most ${MAX_OPERATIONS} operations per request`);
  const out = structuredClone(resource);
  for (const operation of Operations) {
    if (operation === null || typeof operation !== 'object' || Array.isArray(operation))
      throw bad('invalidSyntax', 'each operation must be an object');
    const { op, path, value } = operation as { op?: unknown; path?: unknown; value?: unknown };
    const kind = typeof op === 'string' ? op.toLowerCase() : '';
    if (kind !== 'add' && kind !== 'remove' && kind !== 'replace')
      throw bad('invalidSyntax', 'op must be "add", "remove" or "replace"');
    if (path !== undefined && typeof path !== 'string') throw bad('invalidPath', 'path must be a string');
    if (path === undefined) {
      // §3.5.2.1, §3.5.2.3: without a path the value is an object of attributes; remove needs a path (§3.5.2.2).
      if (kind === 'remove') throw bad('noTarget', 'remove needs a path');
      if (value === null || typeof value !== 'object' || Array.isArray(value))
        throw bad('invalidValue', 'without a path the value must be an object of attributes');
      for (const [name, v] of Object.entries(value as Json)) {
        if (name === 'schemas') continue;
        // A value object may name attributes fully qualified (`urn:...:User:userName`).
        applyOne(out, kind, resolve(name.startsWith('urn:') ? stripSchema(name, schema) : name, attributes, schema), v);
      }
      continue;
    }
    if (kind !== 'remove' && value === undefined) throw bad('invalidSyntax', `${kind} needs a value`);
    const target = resolve(path, attributes, schema);
    // §3.5.2.2: removing a required attribute is a mutability error.
    if (kind === 'remove' && target.def.required && target.subName === undefined)
      throw bad('mutability', `"${target.name}" is required`);
    applyOne(out, kind, target, value);
  }
  return out;
}

/** `urn:...:User:userName` → `userName` for the resource's own schema. */
function stripSchema(name: string, schema: string): string {
  if (name.toLowerCase().startsWith(`${schema.toLowerCase()}:`)) return name.slice(schema.length + 1);
  throw bad('invalidPath', `"${name}" is not an attribute of ${schema}`);
}

interface Target extends PatchPath {
  def: AttributeDefinition;
  /** The attribute's name as the schema spells it. */
  name: string;
  subName?: string;
}

function resolve(text: string, attributes: readonly AttributeDefinition[], schema: string): Target {
  const parsed = parsePatchPath(text);
  if (parsed.path.uri !== undefined && parsed.path.uri.toLowerCase() !== schema.toLowerCase())
    throw bad('invalidPath', `"${parsed.path.uri}" is not the resource's schema`);
  const def = definitionOf(attributes, parsed.path.attr);
  if (!def) throw bad('invalidPath', `"${parsed.path.attr}" is not an attribute`);
  const subText = parsed.sub ?? parsed.path.sub;
  const subDef = subText === undefined ? undefined : definitionOf(attributes, parsed.path.attr, subText);
  if (subText !== undefined && !subDef)
    throw bad('invalidPath', `"${parsed.path.attr}.${subText}" is not an attribute`);
  if (parsed.filter !== undefined && !def.multiValued)
    throw bad('invalidPath', `"${def.name}" is not multi-valued: no value filter applies`);
  if (def.mutability === 'readOnly' || subDef?.mutability === 'readOnly')
    throw bad('mutability', `"${def.name}${subDef ? `.${subDef.name}` : ''}" is read-only`);
  return { ...parsed, def, name: def.name, ...(subDef ? { subName: subDef.name } : {}) };
}

function applyOne(out: Json, op: 'add' | 'remove' | 'replace', t: Target, value: unknown): void {
  const current = out[t.name];
  if (t.filter !== undefined) {
    const list = Array.isArray(current) ? current : [];
    const hit = (v: unknown) => matches(t.filter!, v, (a) => definitionOf([t.def], t.def.name, a)?.caseExact ?? false);
    if (!list.some(hit)) throw bad('noTarget', `no value of "${t.name}" matches the filter`);
    if (op === 'remove') {
      if (t.subName === undefined)
        setOrDelete(
          out,
          t.name,
          list.filter((v) => !hit(v)),
        );
      else
        setOrDelete(
          out,
          t.name,
          list.map((v) => (hit(v) ? withoutKey(v, t.subName!) : v)),
        );
      return;
    }
    setOrDelete(
      out,
      t.name,
      list.map((v) => {
        if (!hit(v)) return v;
        if (t.subName !== undefined) return { ...asObject(v), [t.subName]: value };
        return { ...asObject(v), ...asObject(value) };
      }),
    );
    return;
  }
  const sub = t.subName;
  if (op === 'remove') {
    if (sub === undefined) {
      // Common practice (Azure AD, Okta): remove with a value list removes those values.
      if (t.def.multiValued && Array.isArray(value) && Array.isArray(current)) {
        const drop = new Set(value.map((v) => String(asObject(v).value)));
        setOrDelete(
          out,
          t.name,
          current.filter((v) => !drop.has(String(asObject(v).value))),
        );
      } else delete out[t.name];
    } else if (t.def.multiValued)
      setOrDelete(
        out,
        t.name,
        (Array.isArray(current) ? current : []).map((v) => withoutKey(v, sub)),
      );
    else if (current !== undefined) setOrDelete(out, t.name, withoutKey(current, sub));
    return;
  }
  if (sub !== undefined) {
    if (t.def.multiValued) {
      const list = Array.isArray(current) ? current : [];
      if (list.length === 0) throw bad('noTarget', `"${t.name}" has no values to set "${sub}" on`);
      out[t.name] = list.map((v) => ({ ...asObject(v), [sub]: value }));
    } else out[t.name] = { ...(current === undefined ? {} : asObject(current)), [sub]: value };
    return;
  }
  if (t.def.multiValued) {
    const values = Array.isArray(value) ? value : [value];
    if (op === 'replace') out[t.name] = values;
    else {
      // add: values are appended, a value already present is not repeated (§3.5.2.1).
      const list = Array.isArray(current) ? [...current] : [];
      const keyOf = (v: unknown) =>
        JSON.stringify(typeof v === 'object' && v !== null ? (asObject(v).value ?? v) : v).toLowerCase();
      for (const v of values) if (!list.some((x) => keyOf(x) === keyOf(v))) list.push(v);
      out[t.name] = list;
    }
    return;
  }
  if (t.def.type === 'complex' && value !== null && typeof value === 'object' && !Array.isArray(value))
    out[t.name] = { ...(current === undefined ? {} : asObject(current)), ...(value as Json) };
  else out[t.name] = value;
}

function asObject(v: unknown): Json {
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    throw bad('invalidValue', 'a complex value must be an object');
  return v as Json;
}

function withoutKey(v: unknown, key: string): Json {
  const { [key]: _dropped, ...rest } = asObject(v);
  return rest;
}

function setOrDelete(out: Json, name: string, value: unknown): void {
  const empty =
    value === undefined ||
    (Array.isArray(value) && value.length === 0) ||
    (value !== null && typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length === 0);
  if (empty) delete out[name];
  else out[name] = value;
}
