/**
 * The pure parts of the account pages: the device description of a session's
 * `User-Agent` and the checks of an edited profile claim, with fast-check properties (any input:
 * an answer, never an exception; the checks bound what is stored).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { describeUserAgent } from '../../src/users/user-agent.js';
import { PROFILE_VALUE_MAX, profileProblem } from '../../src/users/account.js';
import { EDITABLE_CLAIMS } from '../../src/config/schema.js';
import { ConfigError, resolveConfig } from '../../src/config/loader.js';

describe('describeUserAgent', () => {
  it('names the browser and system of common user agents, Chromium-based browsers first', () => {
    const cases: [string, { browser?: string; system?: string }][] = [
      [
        'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
        { browser: 'Chrome', system: 'Linux' },
      ],
      [
        'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0',
        { browser: 'Edge', system: 'Windows' },
      ],
      [
        'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:128.0) Gecko/20100101 Firefox/128.0',
        { browser: 'Firefox', system: 'Windows' },
      ],
      [
        'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
        { browser: 'Safari', system: 'iOS' },
      ],
      [
        'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36',
        { browser: 'Chrome', system: 'Android' },
      ],
      [
        'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15',
        { browser: 'Safari', system: 'macOS' },
      ],
      ['curl/8.5.0', { browser: 'curl' }],
    ];
    for (const [ua, expected] of cases) expect(describeUserAgent(ua), ua).toEqual(expected);
    expect(describeUserAgent('lightMyRequest')).toBeUndefined();
    expect(describeUserAgent(undefined)).toBeUndefined();
  });

  it('answers any string with known names only', () => {
    const browsers = new Set([
      'Edge',
      'Opera',
      'Samsung Internet',
      'Vivaldi',
      'Yandex Browser',
      'Firefox',
      'Headless Chrome',
      'Chrome',
      'Safari',
      'curl',
    ]);
    const systems = new Set(['iOS', 'Android', 'ChromeOS', 'Windows', 'macOS', 'Linux']);
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (ua) => {
        const d = describeUserAgent(ua);
        if (d === undefined) return;
        expect(d.browser === undefined || browsers.has(d.browser)).toBe(true);
        expect(d.system === undefined || systems.has(d.system)).toBe(true);
      }),
    );
  });
});

describe('profileProblem', () => {
  it('checks the formats of OIDC Core §5.1 and refuses control and bidirectional override characters', () => {
    expect(profileProblem('birthdate', '1990-04-01')).toBeUndefined();
    expect(profileProblem('birthdate', '1990')).toBeUndefined();
    expect(profileProblem('birthdate', '1990-13-01')).toBe('not_a_date');
    expect(profileProblem('locale', 'de-DE')).toBeUndefined();
    expect(profileProblem('locale', 'en_GB')).toBeUndefined();
    expect(profileProblem('locale', 'de DE')).toBe('not_a_locale');
    expect(profileProblem('zoneinfo', 'America/Los_Angeles')).toBeUndefined();
    expect(profileProblem('zoneinfo', '../etc/passwd')).toBe('not_a_zone');
    expect(profileProblem('name', 'Zoë O\u2019Brien-Łukasz')).toBeUndefined();
    expect(profileProblem('name', 'Evil\u202eTxt')).toBe('control_characters');
    expect(profileProblem('name', 'two\nlines')).toBe('control_characters');
    expect(profileProblem('name', 'x'.repeat(PROFILE_VALUE_MAX + 1))).toBe('too_long');
    expect(profileProblem('birthdate', '')).toBeUndefined();
  });

  it('accepts only bounded values without control characters, for every editable claim', () => {
    fc.assert(
      fc.property(fc.constantFrom(...EDITABLE_CLAIMS), fc.string({ maxLength: 400 }), (claim, value) => {
        if (profileProblem(claim, value) !== undefined) return;
        expect(value.length).toBeLessThanOrEqual(PROFILE_VALUE_MAX);
        expect(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/.test(value)).toBe(false);
      }),
    );
  });
});

describe('config account.editableClaims', () => {
  it('defaults to the name claims and refuses claims apps may trust for access', () => {
    expect(resolveConfig({}).account.editableClaims).toEqual(['name', 'given_name', 'family_name']);
    expect(resolveConfig({ account: { editableClaims: [] } }).account.editableClaims).toEqual([]);
    for (const claim of [
      'sub',
      'email',
      'email_verified',
      'role',
      'tenant',
      'preferred_username',
      'picture',
      'phone_number',
    ])
      expect(() => resolveConfig({ account: { editableClaims: [claim] } }), claim).toThrow(ConfigError);
    expect(() => resolveConfig({ account: { editableClaims: ['name', 'name'] } })).toThrow(ConfigError);
  });
});
