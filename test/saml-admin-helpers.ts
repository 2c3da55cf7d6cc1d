/**
 * Fixtures of the SAML service provider management suites: a sign-in through an SP's
 * AuthnRequest to the Response posted to its ACS.
 */
import { Browser, isLoginPage } from './authorize-helpers.js';
import type { TestSigil } from './helpers.js';
import { authnRequest, type PostedResponse, postedResponse, redirectPath } from './saml-helpers.js';

/** The issuer of the test config (`testConfig`). */
export const ISSUER = 'http://127.0.0.1:5999';

/** Signs alice in at `sigil` through an AuthnRequest of `sp` naming `acs`; returns the posted Response. */
export async function ssoThrough(sigil: TestSigil, sp: string, acs: string): Promise<PostedResponse> {
  const b = new Browser(sigil);
  let step = await b.follow(await b.get(redirectPath(authnRequest(ISSUER, { issuer: sp, acs }))));
  if (isLoginPage(step)) step = await b.follow(await b.submitLogin(step, 'alice', 'alice'));
  return postedResponse(step.body);
}
