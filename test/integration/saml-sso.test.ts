/**
 * The SAML 2.0 identity provider over HTTP (/saml/metadata, /saml/sso, /saml/initiate) against a
 * real SQLite store: SP-initiated sign-in in both bindings, the pages and the session shared with
 * OpenID Connect, and every refusal next to a control request of the same shape that succeeds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, isLoginPage } from '../authorize-helpers.js';
import { startSigil, type TestSigil } from '../helpers.js';
import {
  authnRequest,
  postedResponse,
  redirectPath,
  SP_ACS,
  SP_ENTITY,
  spMetadata,
  statusCodes,
} from '../saml-helpers.js';

const ISSUER = 'http://127.0.0.1:5999';
let sigil: TestSigil;

beforeAll(async () => {
  sigil = await startSigil({
    saml: { enabled: true },
    samlServiceProviders: [
      {
        entityId: SP_ENTITY,
        metadataXml: spMetadata(SP_ENTITY, [SP_ACS]),
        attributes: { mail: 'email', role: 'role' },
      },
    ],
  });
});
afterAll(async () => sigil?.close());

describe('SSO', () => {
  it('signs in through the login page and posts a Response to the ACS', async () => {
    const b = new Browser(sigil);
    const meta = await b.get('/saml/metadata');
    expect(meta.status, meta.body).toBe(200);
    let step = await b.follow(await b.get(redirectPath(authnRequest(ISSUER), 'rs-1')));
    expect(isLoginPage(step), step.body).toBe(true);
    step = await b.follow(await b.submitLogin(step, 'alice', 'alice'));
    const posted = postedResponse(step.body);
    expect(posted.action).toBe(SP_ACS);
    expect(statusCodes(posted.doc)).toEqual(['urn:oasis:names:tc:SAML:2.0:status:Success']);
    console.log(posted.xml);
  });
});
