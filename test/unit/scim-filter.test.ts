/** The SCIM filter and PATCH path parser (src/protocol/scim-filter.ts), RFC 7644 §3.4.2.2, §3.5.2. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Filter,
  matches,
  MAX_FILTER_DEPTH,
  MAX_FILTER_LENGTH,
  MAX_FILTER_TERMS,
  parseFilter,
  parsePatchPath,
  ScimError,
} from '../../src/protocol/scim-filter.js';

/** The filter as a fully parenthesised string, to read the tree's shape. */
function show(f: Filter): string {
  switch (f.kind) {
    case 'and':
    case 'or':
      return `(${show(f.left)} ${f.kind} ${show(f.right)})`;
    case 'not':
      return `not(${show(f.filter)})`;
    case 'valuePath':
      return `${f.path.attr}[${show(f.filter)}]`;
    case 'present':
      return `${f.path.attr}${f.path.sub ? `.${f.path.sub}` : ''} pr`;
    case 'compare':
      return `${f.path.uri ? `${f.path.uri}:` : ''}${f.path.attr}${f.path.sub ? `.${f.path.sub}` : ''} ${f.op} ${JSON.stringify(f.value)}`;
  }
}

function scimTypeOf(run: () => unknown): string | undefined {
  try {
    run();
    return undefined;
  } catch (err) {
    if (!(err instanceof ScimError)) throw err;
    expect(err.status).toBe(400);
    return err.scimType;
  }
}

describe('parseFilter', () => {
  it('parses the examples of RFC 7644 §3.4.2.2 with not > and > or and grouping', () => {
    expect(show(parseFilter('userName Eq "john"'))).toBe('userName eq "john"');
    expect(show(parseFilter('urn:ietf:params:scim:schemas:core:2.0:User:userName sw "J"'))).toBe(
      'urn:ietf:params:scim:schemas:core:2.0:User:userName sw "J"',
    );
    expect(show(parseFilter('title pr and userType eq "Employee"'))).toBe('(title pr and userType eq "Employee")');
    expect(show(parseFilter('a eq 1 or b eq 2 and c eq 3'))).toBe('(a eq 1 or (b eq 2 and c eq 3))');
    expect(show(parseFilter('(a eq 1 or b eq 2) and c eq 3'))).toBe('((a eq 1 or b eq 2) and c eq 3)');
    expect(
      show(parseFilter('userType eq "Employee" and not (emails co "example.com" or emails.value co "example.org")')),
    ).toBe('(userType eq "Employee" and not((emails co "example.com" or emails.value co "example.org")))');
    expect(
      show(
        parseFilter(
          'emails[type eq "work" and value co "@example.com"] or ims[type eq "xmpp" and value co "@foo.com"]',
        ),
      ),
    ).toBe('(emails[(type eq "work" and value co "@example.com")] or ims[(type eq "xmpp" and value co "@foo.com")])');
    expect(
      show(parseFilter('meta.lastModified gt "2011-05-13T04:42:34Z" and x eq null and y eq true and z le -1.5e2')),
    ).toBe('(((meta.lastModified gt "2011-05-13T04:42:34Z" and x eq null) and y eq true) and z le -150)');
    expect(show(parseFilter('userName eq "a \\"quoted\\" \\u00e9"'))).toBe('userName eq "a \\"quoted\\" é"');
  });

  it('bounds length, depth and terms', () => {
    expect(scimTypeOf(() => parseFilter(`a eq "${'x'.repeat(MAX_FILTER_LENGTH)}"`))).toBe('invalidFilter');
    expect(scimTypeOf(() => parseFilter(`${'('.repeat(MAX_FILTER_DEPTH)}a pr${')'.repeat(MAX_FILTER_DEPTH)}`))).toBe(
      'invalidFilter',
    );
    expect(show(parseFilter(`${'('.repeat(MAX_FILTER_DEPTH - 1)}a pr${')'.repeat(MAX_FILTER_DEPTH - 1)}`))).toBe(
      'a pr',
    );
    expect(
      scimTypeOf(() => parseFilter(Array.from({ length: MAX_FILTER_TERMS + 1 }, () => 'a pr').join(' and '))),
    ).toBe('invalidFilter');
    expect(() => parseFilter(Array.from({ length: MAX_FILTER_TERMS }, () => 'a pr').join(' and '))).not.toThrow();
  });

  it('returns a filter or throws invalidFilter, for any input (fast-check)', () => {
    const piece = fc.constantFrom(
      'a',
      'b.c',
      'urn:x:y:a',
      'eq',
      'ne',
      'co',
      'sw',
      'ew',
      'gt',
      'ge',
      'lt',
      'le',
      'pr',
      'and',
      'or',
      'not',
      '(',
      ')',
      '[',
      ']',
      '"s"',
      '"',
      '1',
      '-2.5',
      'true',
      'null',
      ' ',
      '\\',
      '.d',
    );
    fc.assert(
      fc.property(
        fc.oneof(
          fc.array(piece, { maxLength: 20 }).map((p) => p.join(' ')),
          fc.string({ maxLength: 80 }),
        ),
        (text) => {
          const type = scimTypeOf(() => parseFilter(text));
          if (type !== undefined) expect(type).toBe('invalidFilter');
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('parsePatchPath', () => {
  it('parses attribute paths and value paths with a sub-attribute', () => {
    expect(parsePatchPath('name.givenName')).toEqual({ path: { attr: 'name', sub: 'givenName' } });
    const p = parsePatchPath('emails[type eq "work"].value');
    expect(p.path).toEqual({ attr: 'emails' });
    expect(p.sub).toBe('value');
    expect(show(p.filter as Filter)).toBe('type eq "work"');
    expect(show(parsePatchPath('members[value eq "2819c223"]').filter as Filter)).toBe('value eq "2819c223"');
    for (const bad of ['', 'a..b', 'a[b eq 1', 'a[b eq 1] .c', 'a[b eq 1]x', 'name.givenName[x pr]', '1a'])
      expect(
        scimTypeOf(() => parsePatchPath(bad)),
        bad,
      ).toBe('invalidPath');
  });
});

describe('matches', () => {
  const exact = (a: string) => a === 'value';
  it('compares as §3.4.2.2 says: case per attribute, ne, pr, ordering; booleans only with eq', () => {
    const email = { value: 'Ann@Example.com', type: 'Work', primary: true };
    expect(matches(parseFilter('type eq "work"'), email, exact)).toBe(true);
    expect(matches(parseFilter('value eq "ann@example.com"'), email, exact)).toBe(false);
    expect(matches(parseFilter('value co "@Example" and primary eq true'), email, exact)).toBe(true);
    expect(matches(parseFilter('not (type ne "work")'), email, exact)).toBe(true);
    expect(matches(parseFilter('display pr or value sw "Ann"'), email, exact)).toBe(true);
    expect(matches(parseFilter('type gt "v" and type lt "x"'), email, exact)).toBe(true);
    expect(scimTypeOf(() => matches(parseFilter('primary gt true'), email, exact))).toBe('invalidFilter');
  });
});
