/**
 * The list side of SCIM (RFC 7644 §3.4.2): the list parameters as received, their paging and
 * sorting, and the projection of a resource onto `attributes` / `excludedAttributes` (§3.4.2.5,
 * §3.9). Pure functions; the service and the endpoint share them.
 */
import { type AttrPath, parseAttrPathText, parseFilter, ScimError } from '../protocol/scim-filter.js';
import type { ListQuery } from '../stores/directory.js';
import { GROUP_SCHEMA, MAX_COUNT, USER_SCHEMA } from './schemas.js';

type Json = Record<string, unknown>;

/** The list parameters of RFC 7644 §3.4.2 as received (query or SearchRequest). */
export interface ListParams {
  filter?: string;
  sortBy?: string;
  sortOrder?: string;
  startIndex?: string | number;
  count?: string | number;
  attributes?: string;
  excludedAttributes?: string;
}

function invalidValue(detail: string): ScimError {
  return new ScimError(400, detail, 'invalidValue');
}

/**
 * Parses `startIndex`/`count` (§3.4.2.4): 1-based, below 1 is 1, above 2^31 - 1 is that; count below 0 is 0,
 * above `MAX_COUNT` is `MAX_COUNT`.
 */
function page(params: ListParams): { offset: number; limit: number; startIndex: number } {
  const int = (v: string | number | undefined, name: string): number | undefined => {
    if (v === undefined || v === '') return undefined;
    const n = typeof v === 'number' ? v : /^-?\d{1,9}$/.test(v) ? Number(v) : Number.NaN;
    if (!Number.isInteger(n)) throw invalidValue(`${name} must be an integer`);
    return n;
  };
  // At most 2^31 - 1 (an offset the stores' integers hold; far past any list).
  const startIndex = Math.min(2 ** 31 - 1, Math.max(1, int(params.startIndex, 'startIndex') ?? 1));
  const limit = Math.min(MAX_COUNT, Math.max(0, int(params.count, 'count') ?? MAX_COUNT));
  return { offset: startIndex - 1, limit, startIndex };
}

/**
 * The store's list query of `params`: filter, sort and page (§3.4.2.2 to §3.4.2.4). @throws ScimError 400 as
 * `page` and the filter parser do.
 */
export function listQuery(params: ListParams): ListQuery & { startIndex: number } {
  const { offset, limit, startIndex } = page(params);
  const order = params.sortOrder?.toLowerCase();
  if (order !== undefined && order !== 'ascending' && order !== 'descending')
    throw invalidValue('sortOrder must be "ascending" or "descending"');
  return {
    ...(params.filter !== undefined ? { filter: parseFilter(params.filter) } : {}),
    ...(params.sortBy !== undefined ? { sortBy: parseAttrPathText(params.sortBy, 'invalidValue') } : {}),
    descending: order === 'descending',
    offset,
    limit,
    startIndex,
  };
}

/**
 * `resource` with only `attributes` (plus `id` and `schemas`, returned always), or without
 * `excludedAttributes` (§3.4.2.5, §3.9). Sub-attribute paths select within complex values.
 */
export function project(resource: Json, attributes: AttrPath[] | undefined, excluded: AttrPath[] | undefined): Json {
  const ALWAYS = new Set(['id', 'schemas']);
  const name = (k: string) => k.toLowerCase();
  if (attributes !== undefined && attributes.length > 0) {
    const out: Json = {};
    for (const [k, v] of Object.entries(resource)) {
      if (ALWAYS.has(k)) {
        out[k] = v;
        continue;
      }
      const wanted = attributes.filter((a) => name(a.attr) === name(k));
      if (wanted.length === 0) continue;
      if (wanted.some((a) => a.sub === undefined)) out[k] = v;
      else {
        const subs = new Set(wanted.map((a) => name(a.sub as string)));
        const pick = (o: unknown) =>
          o !== null && typeof o === 'object'
            ? Object.fromEntries(Object.entries(o as Json).filter(([s]) => subs.has(name(s))))
            : o;
        out[k] = Array.isArray(v) ? v.map(pick) : pick(v);
      }
    }
    return out;
  }
  if (excluded !== undefined && excluded.length > 0) {
    const out: Json = { ...resource };
    for (const e of excluded) {
      const k = Object.keys(out).find((x) => name(x) === name(e.attr));
      if (k === undefined || ALWAYS.has(k)) continue;
      if (e.sub === undefined) delete out[k];
      else {
        const drop = (o: unknown) =>
          o !== null && typeof o === 'object'
            ? Object.fromEntries(Object.entries(o as Json).filter(([s]) => name(s) !== name(e.sub as string)))
            : o;
        out[k] = Array.isArray(out[k]) ? (out[k] as unknown[]).map(drop) : drop(out[k]);
      }
    }
    return out;
  }
  return resource;
}

/** Parses `attributes` / `excludedAttributes` (comma-separated attribute paths). */
export function attributeList(text: string | undefined): AttrPath[] | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  const parts = text
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p.length > 0);
  if (parts.length > 50) throw invalidValue('at most 50 attribute paths');
  return parts.map((p) => {
    const path = parseAttrPathText(p, 'invalidValue');
    return path.uri !== undefined && path.uri !== USER_SCHEMA && path.uri !== GROUP_SCHEMA
      ? path
      : { attr: path.attr, ...(path.sub ? { sub: path.sub } : {}) };
  });
}
