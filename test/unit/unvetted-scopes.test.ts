/**
 * The one scope policy of dynamically registered and metadata-document clients
 * (src/clients/unvetted-scopes.ts) and its use by the registration check: properties over any
 * requested scope and grant types.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { clientFromDocument } from '../../src/clients/metadata-documents.js';
import { checkMetadata, type RegistrationPolicy } from '../../src/clients/registration-metadata.js';
import { clientCredentialsScopes, consentedScopes } from '../../src/clients/unvetted-scopes.js';
import { isManagementScope } from '../../src/config/schema.js';
import { OAuthError } from '../../src/protocol/errors.js';

const IDENTITY = ['openid', 'profile', 'email'];
const API = ['api1', 'mcp:tools'];
const MANAGEMENT = ['scim', 'sigil:admin', 'sigil:admin:read', 'sigil:register', 'sigil:org:admin'];
const KNOWN = { all: [...IDENTITY, 'offline_access', ...API, ...MANAGEMENT], identity: IDENTITY };
const ALL_NAMES = [...KNOWN.all, 'unknown'];

/** The policy `ClientRegistrations.policy()` makes of `configured` (refresh_token allowed). */
function policy(configured: string[] | undefined): RegistrationPolicy {
  const allowedScopes = consentedScopes(KNOWN, configured);
  return {
    allowedGrantTypes: ['authorization_code', 'refresh_token', 'client_credentials'],
    allowedAuthMethods: ['client_secret_basic', 'none'],
    idTokenAlg: 'RS256',
    loopbackHttp: false,
    notificationLoopback: false,
    allowedScopes,
    clientCredentialsScopes: clientCredentialsScopes(KNOWN, configured),
    defaultScopes: allowedScopes.filter(
      (s) => s !== 'offline_access' && (configured !== undefined || IDENTITY.includes(s)),
    ),
  };
}

describe('the scope policy of unvetted clients', () => {
  it('by default allows every known scope but the management ones, and no API scope with client_credentials', () => {
    expect(consentedScopes(KNOWN, null)).toEqual([...IDENTITY, 'offline_access', ...API]);
    expect(clientCredentialsScopes(KNOWN, undefined)).toEqual([...IDENTITY, 'offline_access']);
    // A list narrows both, and never lets a management or unknown scope in.
    expect(consentedScopes(KNOWN, ['api1', 'sigil:admin', 'nope'])).toEqual(['api1']);
    expect(clientCredentialsScopes(KNOWN, ['api1', 'scim'])).toEqual(['api1']);
  });

  it('a registration gets exactly the scope asked or a refusal; never a management scope; with client_credentials no unlisted API scope (property)', () => {
    fc.assert(
      fc.property(
        fc.subarray(ALL_NAMES),
        fc.subarray(['authorization_code', 'refresh_token', 'client_credentials'], { minLength: 1 }),
        fc.option(fc.subarray(ALL_NAMES.filter((s) => !isManagementScope(s))), { nil: undefined }),
        (asked, grants, configured) => {
          const body = {
            redirect_uris: ['https://rp.example/cb'],
            grant_types: grants,
            response_types: grants.includes('authorization_code') ? ['code'] : [],
            scope: asked.join(' '),
          };
          let scope: string;
          try {
            scope = String(checkMetadata(body, policy(configured)).metadata.scope);
          } catch (e) {
            expect(e).toBeInstanceOf(OAuthError);
            expect((e as OAuthError).code).toBe('invalid_client_metadata');
            return;
          }
          const registered = scope.split(' ').filter((s) => s !== '');
          expect(registered).toEqual(asked);
          expect(registered.some(isManagementScope)).toBe(false);
          if (grants.includes('client_credentials') && configured === undefined)
            expect(registered.some((s) => API.includes(s))).toBe(false);
          if (configured !== undefined) expect(registered.every((s) => configured.includes(s))).toBe(true);
        },
      ),
    );
  });

  it('a metadata document client gets the same scopes by default', () => {
    const url = 'https://agent.example/client.json';
    const client = clientFromDocument(
      url,
      { client_id: url, redirect_uris: ['https://agent.example/cb'], scope: 'openid mcp:tools sigil:admin' },
      consentedScopes(KNOWN, null),
    );
    expect(client.allowedScopes).toEqual(['openid', 'mcp:tools']);
    expect(client.requireConsent).toBe(true);
  });
});
