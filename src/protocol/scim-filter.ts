/**
 * SCIM 2.0 filters and attribute paths (RFC 7644 §3.4.2.2, §3.5.2; ABNF in §3.4.2.2 and
 * Figure 1/§3.10), parsed by a small recursive-descent parser with bounded input: at most
 * `MAX_FILTER_LENGTH` characters, `MAX_FILTER_DEPTH` levels of nesting (parentheses, `not`, value
 * paths) and `MAX_FILTER_TERMS` comparisons. Precedence as §3.4.2.2 Table 4: `not` binds tighter
 * than `and`, which binds tighter than `or`; grouping with parentheses. Also the in-memory
 * evaluation of a filter against one JSON value (PATCH value paths, §3.5.2), and the SCIM error
 * (§3.12) every SCIM module throws.
 */

/** Longest filter or path accepted, in characters. */
export const MAX_FILTER_LENGTH = 4096;
/** Deepest nesting of parentheses, `not` and value paths. */
export const MAX_FILTER_DEPTH = 8;
/** Most comparisons (`attrExp`) in one filter. */
export const MAX_FILTER_TERMS = 50;

/** The `scimType` values of RFC 7644 §3.12 Table 9 that Sigil answers with. */
export type ScimType =
  | 'invalidFilter'
  | 'tooMany'
  | 'uniqueness'
  | 'mutability'
  | 'invalidSyntax'
  | 'invalidPath'
  | 'noTarget'
  | 'invalidValue'
  | 'invalidVers'
  | 'sensitive';

/** A refused SCIM request, rendered in the error schema of RFC 7644 §3.12. */
export class ScimError extends Error {
  /**
   * @param status the HTTP status (400, 401, 403, 404, 409, 412, 413, 500, 501)
   * @param detail a human-readable explanation (never a secret)
   * @param scimType the detail error keyword of §3.12 Table 9, for 400 and 409 answers
   * @param headers extra response headers (e.g. `WWW-Authenticate`)
   */
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly scimType?: ScimType,
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = 'ScimError';
  }

  /** The error response body (RFC 7644 §3.12): `status` is a string there. */
  toJSON(): Record<string, unknown> {
    return {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
      status: String(this.status),
      ...(this.scimType ? { scimType: this.scimType } : {}),
      detail: this.detail,
    };
  }
}

/** `attrPath` (§3.10 and the ABNF of §3.4.2.2): `[URI ":"] ATTRNAME ["." subAttr]`. */
export interface AttrPath {
  /** The schema URI, when the path was fully qualified. */
  uri?: string;
  attr: string;
  sub?: string;
}

/** A comparison operator of §3.4.2.2 Table 3. */
export type CompareOp = 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'gt' | 'ge' | 'lt' | 'le';
/** A `compValue`: a JSON string, number, `true`, `false` or `null`. */
export type CompValue = string | number | boolean | null;

/** A parsed filter. */
export type Filter =
  | { kind: 'compare'; path: AttrPath; op: CompareOp; value: CompValue }
  | { kind: 'present'; path: AttrPath }
  | { kind: 'and' | 'or'; left: Filter; right: Filter }
  | { kind: 'not'; filter: Filter }
  /** `attrPath "[" valFilter "]"`: some value of a multi-valued attribute matches `filter`. */
  | { kind: 'valuePath'; path: AttrPath; filter: Filter };

/** A PATCH `path` (§3.5.2 ABNF): an attribute, optionally filtered, optionally a sub-attribute of the matches. */
export interface PatchPath {
  path: AttrPath;
  /** The value filter of `attr[filter]`. */
  filter?: Filter;
  /** The sub-attribute after `attr[filter].` */
  sub?: string;
}

const OPS = new Set<string>(['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'ge', 'lt', 'le']);
const ATTRNAME = /^[A-Za-z][A-Za-z0-9_-]*$/;
/** Schema URIs are URNs here (RFC 7643 §3.1 `urn:ietf:params:scim:schemas:...`). */
const URI = /^urn:[A-Za-z0-9][A-Za-z0-9.:_-]*$/i;

type Token =
  | { t: 'word'; v: string; at: number }
  | { t: 'string'; v: string; at: number }
  | { t: 'number'; v: number; at: number }
  | { t: '(' | ')' | '[' | ']'; at: number };

function invalid(scimType: ScimType, detail: string): ScimError {
  return new ScimError(400, detail, scimType);
}

/** Splits a filter or path into tokens. */
function tokenize(text: string, scimType: ScimType): Token[] {
  if (text.length > MAX_FILTER_LENGTH) throw invalid(scimType, `longer than ${MAX_FILTER_LENGTH} characters`);
  const out: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (c === ' ') {
      i++;
      continue;
    }
    if (c === '(' || c === ')' || c === '[' || c === ']') {
      out.push({ t: c, at: i });
      i++;
      continue;
    }
    if (c === '"') {
      // A JSON string (RFC 7159 §7), escapes included.
      const m = /^"(?:[^"\\\u0000-\u001f]|\\["\\/bfnrt]|\\u[0-9A-Fa-f]{4})*"/.exec(text.slice(i));
      if (!m) throw invalid(scimType, `unterminated or malformed string at ${i}`);
      const v = JSON.parse(m[0]) as string;
      // PostgreSQL refuses a NUL in text; no stored value has one.
      if (v.includes('\u0000')) throw invalid(scimType, `a NUL character in the string at ${i}`);
      out.push({ t: 'string', v, at: i });
      i += m[0].length;
      continue;
    }
    const num = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?(?![A-Za-z0-9_.:-])/.exec(text.slice(i));
    if (num) {
      const v = Number(num[0]);
      if (!Number.isFinite(v)) throw invalid(scimType, `number out of range at ${i}`);
      out.push({ t: 'number', v, at: i });
      i += num[0].length;
      continue;
    }
    const word = /^[A-Za-z0-9$_.:-]+/.exec(text.slice(i));
    if (!word) throw invalid(scimType, `unexpected character at ${i}`);
    out.push({ t: 'word', v: word[0], at: i });
    i += word[0].length;
  }
  return out;
}

/**
 * Parses an `attrPath`: an optional schema URN prefix (everything up to the last `:`), an
 * attribute name and an optional sub-attribute.
 */
function parseAttrPath(word: string, scimType: ScimType): AttrPath {
  let rest = word;
  let uri: string | undefined;
  const colon = word.lastIndexOf(':');
  if (colon !== -1) {
    uri = word.slice(0, colon);
    rest = word.slice(colon + 1);
    if (!URI.test(uri)) throw invalid(scimType, `"${uri}" is not a schema URI`);
  }
  const parts = rest.split('.');
  if (parts.length > 2 || !parts.every((p) => ATTRNAME.test(p)))
    throw invalid(scimType, `"${word}" is not an attribute path`);
  return {
    ...(uri !== undefined ? { uri } : {}),
    attr: parts[0] as string,
    ...(parts[1] !== undefined ? { sub: parts[1] } : {}),
  };
}

class Parser {
  private i = 0;
  private terms = 0;

  constructor(
    private readonly tokens: Token[],
    private readonly scimType: ScimType,
  ) {}

  private peek(): Token | undefined {
    return this.tokens[this.i];
  }

  private isWord(v: string): boolean {
    const t = this.peek();
    return t?.t === 'word' && t.v.toLowerCase() === v;
  }

  private expect(t: '(' | ')' | '[' | ']'): void {
    const tok = this.peek();
    if (tok?.t !== t) throw invalid(this.scimType, `expected "${t}"${tok ? ` at ${tok.at}` : ' at the end'}`);
    this.i++;
  }

  atEnd(): boolean {
    return this.i >= this.tokens.length;
  }

  /** `FILTER` with `or` as the loosest operator. */
  filter(depth: number): Filter {
    if (depth > MAX_FILTER_DEPTH) throw invalid(this.scimType, `nested deeper than ${MAX_FILTER_DEPTH} levels`);
    let left = this.conjunction(depth);
    while (this.isWord('or')) {
      this.i++;
      left = { kind: 'or', left, right: this.conjunction(depth) };
    }
    return left;
  }

  private conjunction(depth: number): Filter {
    let left = this.unary(depth);
    while (this.isWord('and')) {
      this.i++;
      left = { kind: 'and', left, right: this.unary(depth) };
    }
    return left;
  }

  private unary(depth: number): Filter {
    if (this.isWord('not')) {
      this.i++;
      const next = this.peek();
      if (next?.t !== '(') throw invalid(this.scimType, '"not" must be followed by "("');
      return { kind: 'not', filter: this.group(depth + 1) };
    }
    if (this.peek()?.t === '(') return this.group(depth + 1);
    return this.attrExp(depth);
  }

  private group(depth: number): Filter {
    this.expect('(');
    const inner = this.filter(depth);
    this.expect(')');
    return inner;
  }

  private attrExp(depth: number): Filter {
    const tok = this.peek();
    if (tok?.t !== 'word')
      throw invalid(this.scimType, tok ? `expected an attribute at ${tok.at}` : 'expected an attribute at the end');
    this.i++;
    const path = parseAttrPath(tok.v, this.scimType);
    if (this.peek()?.t === '[') {
      if (path.sub !== undefined)
        throw invalid(
          this.scimType,
          `"${tok.v}[" : a value filter follows a multi-valued attribute, not a sub-attribute`,
        );
      if (depth + 1 > MAX_FILTER_DEPTH) throw invalid(this.scimType, `nested deeper than ${MAX_FILTER_DEPTH} levels`);
      this.i++;
      const inner = this.filter(depth + 1);
      this.expect(']');
      return { kind: 'valuePath', path, filter: inner };
    }
    if (++this.terms > MAX_FILTER_TERMS) throw invalid(this.scimType, `more than ${MAX_FILTER_TERMS} comparisons`);
    const opTok = this.peek();
    if (opTok?.t !== 'word') throw invalid(this.scimType, `expected an operator after "${tok.v}"`);
    const op = opTok.v.toLowerCase();
    this.i++;
    if (op === 'pr') return { kind: 'present', path };
    if (!OPS.has(op)) throw invalid(this.scimType, `unknown operator "${opTok.v}"`);
    const v = this.peek();
    this.i++;
    let value: CompValue;
    if (v?.t === 'string' || v?.t === 'number') value = v.v;
    else if (v?.t === 'word' && ['true', 'false', 'null'].includes(v.v)) value = v.v === 'null' ? null : v.v === 'true';
    else throw invalid(this.scimType, `expected a value after "${opTok.v}"`);
    return { kind: 'compare', path, op: op as CompareOp, value };
  }

  /** A PATCH path: `attrPath` or `attrPath "[" valFilter "]" ["." subAttr]`. */
  patchPath(): PatchPath {
    const tok = this.peek();
    if (tok?.t !== 'word') throw invalid(this.scimType, 'expected an attribute path');
    this.i++;
    const path = parseAttrPath(tok.v, this.scimType);
    if (this.peek()?.t !== '[') return { path };
    if (path.sub !== undefined)
      throw invalid(this.scimType, 'a value filter follows a multi-valued attribute, not a sub-attribute');
    this.i++;
    const filter = this.filter(1);
    this.expect(']');
    const after = this.peek();
    if (after === undefined) return { path, filter };
    // `].sub`: the tokenizer reads ".sub" as one word.
    if (
      after.t === 'word' &&
      /^\.[A-Za-z][A-Za-z0-9_-]*$/.test(after.v) &&
      after.at === (this.tokens[this.i - 1]?.at ?? -2) + 1
    ) {
      this.i++;
      return { path, filter, sub: after.v.slice(1) };
    }
    throw invalid(this.scimType, `unexpected text after "]" at ${after.at}`);
  }
}

/**
 * Parses a `filter` query parameter (RFC 7644 §3.4.2.2).
 * @throws ScimError 400 `invalidFilter` for anything that is not a filter, or over the bounds.
 */
export function parseFilter(text: string): Filter {
  const parser = new Parser(tokenize(text, 'invalidFilter'), 'invalidFilter');
  if (parser.atEnd()) throw invalid('invalidFilter', 'the filter is empty');
  const filter = parser.filter(1);
  if (!parser.atEnd()) throw invalid('invalidFilter', 'unexpected text after the filter');
  return filter;
}

/**
 * Parses a PATCH operation's `path` (RFC 7644 §3.5.2).
 * @throws ScimError 400 `invalidPath` for a malformed path, or over the bounds.
 */
export function parsePatchPath(text: string): PatchPath {
  const parser = new Parser(tokenize(text, 'invalidPath'), 'invalidPath');
  const path = parser.patchPath();
  if (!parser.atEnd()) throw invalid('invalidPath', 'unexpected text after the path');
  return path;
}

/**
 * Parses one entry of `attributes`, `excludedAttributes` or `sortBy` (§3.4.2.3, §3.9): an attrPath.
 * @throws ScimError 400 `scimType` for anything else.
 */
export function parseAttrPathText(text: string, scimType: ScimType): AttrPath {
  if (text.length === 0 || text.length > 300)
    throw invalid(scimType, 'an attribute path must have 1 to 300 characters');
  return parseAttrPath(text, scimType);
}

/**
 * Whether `value` (one value of a multi-valued complex attribute, e.g. an email object, or a
 * simple value) matches `filter`, as §3.4.2.2 defines the operators. Attribute names compare
 * case-insensitively (RFC 7643 §2.1); string values compare case-insensitively unless
 * `caseExact(attr)` says so. Used for PATCH value paths over one resource in memory.
 * @throws ScimError 400 `invalidFilter` for an ordering operator on a boolean (§3.4.2.2).
 */
export function matches(filter: Filter, value: unknown, caseExact: (attr: string) => boolean): boolean {
  switch (filter.kind) {
    case 'and':
      return matches(filter.left, value, caseExact) && matches(filter.right, value, caseExact);
    case 'or':
      return matches(filter.left, value, caseExact) || matches(filter.right, value, caseExact);
    case 'not':
      return !matches(filter.filter, value, caseExact);
    case 'valuePath':
      return valuesAt(value, filter.path).some((v) => matches(filter.filter, v, caseExact));
    case 'present':
      return valuesAt(value, filter.path).some((v) => v !== null && v !== '' && !(Array.isArray(v) && v.length === 0));
    case 'compare': {
      const found = valuesAt(value, filter.path);
      const exact = caseExact(filter.path.sub ?? filter.path.attr);
      if (filter.op === 'ne') return !found.some((v) => compare(v, 'eq', filter.value, exact));
      return found.some((v) => compare(v, filter.op, filter.value, exact));
    }
  }
}

/** The values at `path` of `value` (an object): the attribute, flattened when multi-valued. */
function valuesAt(value: unknown, path: AttrPath): unknown[] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    // A simple multi-valued attribute's value: only `value` names it (RFC 7644 §3.5.2 examples).
    return path.attr.toLowerCase() === 'value' && path.sub === undefined ? [value] : [];
  }
  const get = (o: unknown, name: string): unknown => {
    if (o === null || typeof o !== 'object' || Array.isArray(o)) return undefined;
    const key = Object.keys(o).find((k) => k.toLowerCase() === name.toLowerCase());
    return key === undefined ? undefined : (o as Record<string, unknown>)[key];
  };
  const found = get(value, path.attr);
  const list = Array.isArray(found) ? found : found === undefined ? [] : [found];
  if (path.sub === undefined) return list;
  return list
    .map((v) => get(v, path.sub as string))
    .filter((v) => v !== undefined)
    .flatMap((v) => (Array.isArray(v) ? v : [v]));
}

function compare(actual: unknown, op: CompareOp, expected: CompValue, caseExact: boolean): boolean {
  if (typeof actual === 'boolean' || typeof expected === 'boolean') {
    if (op !== 'eq') throw invalid('invalidFilter', `"${op}" cannot compare booleans`);
    return actual === expected;
  }
  if (expected === null) return op === 'eq' && (actual === null || actual === undefined);
  if (typeof actual === 'number' && typeof expected === 'number') {
    switch (op) {
      case 'eq':
        return actual === expected;
      case 'gt':
        return actual > expected;
      case 'ge':
        return actual >= expected;
      case 'lt':
        return actual < expected;
      case 'le':
        return actual <= expected;
      default:
        return false;
    }
  }
  if (typeof actual !== 'string' || typeof expected !== 'string') return false;
  const a = caseExact ? actual : actual.toLowerCase();
  const e = caseExact ? expected : expected.toLowerCase();
  switch (op) {
    case 'eq':
      return a === e;
    case 'co':
      return a.includes(e);
    case 'sw':
      return a.startsWith(e);
    case 'ew':
      return a.endsWith(e);
    case 'gt':
      return a > e;
    case 'ge':
      return a >= e;
    case 'lt':
      return a < e;
    case 'le':
      return a <= e;
    default:
      return false;
  }
}
