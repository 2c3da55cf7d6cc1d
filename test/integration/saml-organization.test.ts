/**
 * A SAML service provider for one organization's members (`samlServiceProviders[].organization`):
 * a member gets an assertion with the organization's claims mapped to attributes (`org_id`,
 * `org_name`, `org_roles`); a user whose verified email is at a `membership: domain`
 * organization's domain becomes a member on the spot; anyone else gets a Response of status
 * Responder/RequestDenied at the registered ACS, without an assertion. An organization that does
 * not exist is refused in the config file and, naming the field, by /admin/v1 (422).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, ISSUER, isLoginPage } from '../authorize-helpers.js';
import { clientTokens, startSigil, testConfig, type TestSigil } from '../helpers.js';
import {
  attributes,
  authnRequest,
  element,
  type PostedResponse,
  postedResponse,
  redirectPath,
  statusCodes,
} from '../saml-helpers.js';

const ACME_SP = 'https://acme-app.example/sp';
const EXAMPLE_SP = 'https://example-app.example/sp';
const ATTRIBUTES = { orgId: 'org_id', org: 'org_name', orgRoles: 'org_roles', mail: 'email' };

let sigil: TestSigil;
let admin: string;

beforeAll(async () => {
  sigil = await startSigil({
    clients: [
      ...testConfig().clients!,
      {
        clientId: 'automation',
        clientSecrets: ['automation-secret'],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['sigil:admin'],
      },
    ],
    organizations: [
      { name: 'acme', displayName: 'Acme', membership: 'invite' },
      { name: 'example', displayName: 'Example', domains: ['example.com'], membership: 'domain' },
    ],
    saml: { enabled: true },
    samlServiceProviders: [
      { entityId: ACME_SP, acsUrls: [`${ACME_SP}/acs`], attributes: ATTRIBUTES, organization: 'acme' },
      { entityId: EXAMPLE_SP, acsUrls: [`${EXAMPLE_SP}/acs`], attributes: ATTRIBUTES, organization: 'example' },
    ],
  });
  await sigil.context.management.organizations.putMember('acme', '2', ['admin', 'billing']);
  admin = (await clientTokens(sigil, 'sigil:admin', ['automation', 'automation-secret'])).access_token;
});
afterAll(async () => sigil?.close());

/** Signs `user` in through an AuthnRequest of `sp`; the Response posted to its ACS. */
async function ssoAs(sp: string, user: string): Promise<PostedResponse> {
  const b = new Browser(sigil);
  let step = await b.follow(await b.get(redirectPath(authnRequest(ISSUER, { issuer: sp, acs: `${sp}/acs` }))));
  if (isLoginPage(step)) step = await b.follow(await b.submitLogin(step, user, user));
  return postedResponse(step.body);
}

describe('a SAML service provider of one organization', () => {
  it("a member gets an assertion with the organization's id, name and roles as attributes", async () => {
    const posted = await ssoAs(ACME_SP, 'bob');
    expect(posted.action).toBe(`${ACME_SP}/acs`);
    expect(statusCodes(posted.doc)).toEqual(['urn:oasis:names:tc:SAML:2.0:status:Success']);
    const acme = sigil.context.organizations.byName('acme');
    expect(attributes(posted.doc)).toEqual({
      orgId: [acme?.id],
      org: ['acme'],
      orgRoles: ['admin', 'billing'],
    });
  });

  it('a user who is not a member gets RequestDenied at the registered ACS, and no assertion', async () => {
    const posted = await ssoAs(ACME_SP, 'alice');
    expect(posted.action).toBe(`${ACME_SP}/acs`);
    expect(statusCodes(posted.doc)).toEqual([
      'urn:oasis:names:tc:SAML:2.0:status:Responder',
      'urn:oasis:names:tc:SAML:2.0:status:RequestDenied',
    ]);
    expect(element(posted.doc, 'Assertion')).toBeUndefined();
    expect(posted.xml).not.toContain('alice');
    expect(
      await sigil.context.store.organizations.member(sigil.context.organizations.byName('acme')?.id ?? '', '1'),
    ).toBeUndefined();
  });

  it('membership by domain: a verified email at its domain makes the user a member on the spot', async () => {
    const example = sigil.context.organizations.byName('example');
    expect(await sigil.context.store.organizations.member(example?.id ?? '', '1')).toBeUndefined();
    const posted = await ssoAs(EXAMPLE_SP, 'alice');
    expect(statusCodes(posted.doc)).toEqual(['urn:oasis:names:tc:SAML:2.0:status:Success']);
    expect(attributes(posted.doc)).toMatchObject({
      org: ['example'],
      orgId: [example?.id],
      mail: ['alice@example.com'],
    });
    expect(await sigil.context.store.organizations.member(example?.id ?? '', '1')).toMatchObject({ roles: [] });
    // bob has no verified email at example.com: refused.
    expect(statusCodes((await ssoAs(EXAMPLE_SP, 'bob')).doc)).toContain(
      'urn:oasis:names:tc:SAML:2.0:status:RequestDenied',
    );
  });

  it('an unknown organization is refused by the config file and by /admin/v1 (422, naming the field)', async () => {
    await expect(
      startSigil({
        saml: { enabled: true },
        samlServiceProviders: [{ entityId: ACME_SP, acsUrls: [`${ACME_SP}/acs`], organization: 'nope' }],
      }),
    ).rejects.toThrow(/samlServiceProviders\[0\]\.organization: unknown organization "nope"/);
    const refused = await sigil.app.inject({
      method: 'POST',
      url: '/admin/v1/saml-service-providers',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      payload: { entityId: 'https://other.example/sp', acsUrls: ['https://other.example/acs'], organization: 'nope' },
    });
    expect(refused.statusCode, refused.body).toBe(422);
    expect(refused.body).toContain('organization');
    expect(refused.body).toContain('unknown organization');
    // The control: a known organization is accepted.
    const created = await sigil.app.inject({
      method: 'POST',
      url: '/admin/v1/saml-service-providers',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      payload: { entityId: 'https://other.example/sp', acsUrls: ['https://other.example/acs'], organization: 'acme' },
    });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json()).toMatchObject({ serviceProvider: { organization: 'acme' } });
  });
});
