/**
 * An SP's AuthnRequest as the SSO endpoint receives it (SAML Profiles §4.1.4.1; SAML Core §3.4.1),
 * in either binding (binding.ts). Checked in this order, every refusal before anything is stored:
 * what message.ts checks of every message (sizes, the XML, an AuthnRequest of version 2.0, its
 * Issuer a registered SP, the signature verified when present; a POSTed request is read from the
 * XML its signature covers), the signature required when the SP requires it, an ID and an
 * IssueInstant within `REQUEST_MAX_AGE`, Destination (this SSO URL; required when
 * signed, SAML Bindings §3.4.5.2, §3.5.5.2), the ACS (registered, exactly); the binding's sizes and
 * RelayState's 80 bytes are binding.ts's. The replay of an ID is the service's check (saml-service.ts).
 */
import type { BindingMessage } from './binding.js';
import { checkIdAndTime, receiveMessage } from './message.js';
import { POST_BINDING, type ServiceProvider, type ServiceProviders } from './service-providers.js';
import { attr, NS, onlyChild, XmlRefused } from './xml.js';

export { type BindingMessage, MAX_RELAY_STATE_BYTES } from './binding.js';
export { CLOCK_SKEW, REQUEST_MAX_AGE } from './message.js';

/** The NameID format URIs (SAML Core §8.3) of each configured `nameIdFormat`. */
export const NAME_ID_FORMATS = {
  persistent: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
  emailAddress: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
  transient: 'urn:oasis:names:tc:SAML:2.0:nameid-format:transient',
  unspecified: 'urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified',
} as const;

/** The REFEDS MFA Profile's context class: an SP asking for it gets a second factor (step-up). */
export const REFEDS_MFA = 'https://refeds.org/profile/mfa';

/** A request refused before its SP and ACS were known good: the browser stays on Sigil's error page. */
export class SamlRefused extends Error {}

/** A validated AuthnRequest: whom to answer, where, and what it asks. */
export interface AuthnRequest {
  id: string;
  sp: ServiceProvider;
  /** The registered ACS URL the Response goes to. */
  acsUrl: string;
  relayState?: string;
  /** ForceAuthn (SAML Core §3.4.1): sign in again. */
  forceAuthn: boolean;
  /** IsPassive (SAML Core §3.4.1): no page may be shown. */
  isPassive: boolean;
  /** The SP asked for MFA (RequestedAuthnContext naming the REFEDS MFA class). */
  mfa: boolean;
  /** A NameIDPolicy format other than the SP's (InvalidNameIDPolicy, SAML Core §3.4.1.1), if any. */
  unsatisfiedNameIdFormat?: string;
  signed: boolean;
}

/**
 * Reads and checks an AuthnRequest (see the module comment).
 * @param ssoUrl this endpoint's URL, which Destination must name
 * @param now Unix seconds
 * @throws SamlRefused for every refusal, its message fit for the error page (no input echoed).
 */
export function readAuthnRequest(
  message: BindingMessage,
  sps: ServiceProviders,
  ssoUrl: string,
  now: number,
): AuthnRequest {
  try {
    return read(message, sps, ssoUrl, now);
  } catch (err) {
    if (err instanceof XmlRefused) throw new SamlRefused(err.message);
    throw err;
  }
}

function read(message: BindingMessage, sps: ServiceProviders, ssoUrl: string, now: number): AuthnRequest {
  const { root, sp, signed, relayState } = receiveMessage(message, 'SAMLRequest', 'AuthnRequest', sps);
  if (sp.requireSignedAuthnRequests && !signed) throw new SamlRefused('the service provider must sign its requests');
  return checked(root, sp, { relayState, signed, ssoUrl, now });
}

/** The checks of a request whose signature is settled. */
function checked(
  root: Element,
  sp: ServiceProvider,
  at: { relayState: string | undefined; signed: boolean; ssoUrl: string; now: number },
): AuthnRequest {
  const id = checkIdAndTime(root, { destination: at.ssoUrl, signed: at.signed, now: at.now });
  const relay = at.relayState;
  const policy = onlyChild(root, NS.protocol, 'NameIDPolicy');
  const format = policy ? attr(policy, 'Format') : undefined;
  const unsatisfied =
    format !== undefined && format !== NAME_ID_FORMATS.unspecified && format !== NAME_ID_FORMATS[sp.nameIdFormat];
  return {
    id,
    sp,
    acsUrl: acsOf(root, sp),
    ...(relay !== undefined ? { relayState: relay } : {}),
    forceAuthn: attr(root, 'ForceAuthn') === 'true' || attr(root, 'ForceAuthn') === '1',
    isPassive: attr(root, 'IsPassive') === 'true' || attr(root, 'IsPassive') === '1',
    mfa: requestsMfa(root),
    ...(unsatisfied ? { unsatisfiedNameIdFormat: format } : {}),
    signed: at.signed,
  };
}

/**
 * The ACS the Response goes to (SAML Profiles §4.1.4.1): AssertionConsumerServiceURL when it is
 * one of the SP's, exactly; AssertionConsumerServiceIndex of its metadata; else its first.
 */
function acsOf(root: Element, sp: ServiceProvider): string {
  const url = attr(root, 'AssertionConsumerServiceURL');
  const index = attr(root, 'AssertionConsumerServiceIndex');
  const binding = attr(root, 'ProtocolBinding');
  if (url !== undefined && index !== undefined) throw new SamlRefused('the request names its ACS twice');
  if (binding !== undefined && binding !== POST_BINDING)
    throw new SamlRefused('only the HTTP-POST binding is answered');
  if (url !== undefined) {
    if (!sp.acsUrls.includes(url)) throw new SamlRefused('the assertion consumer service URL is not registered');
    return url;
  }
  if (index !== undefined) {
    const found = /^\d{1,5}$/.test(index) ? sp.acsByIndex.get(Number(index)) : undefined;
    if (found === undefined) throw new SamlRefused('the assertion consumer service index is not registered');
    return found;
  }
  return sp.acsUrls[0] as string;
}

/** Whether RequestedAuthnContext names the REFEDS MFA class. */
function requestsMfa(root: Element): boolean {
  const requested = onlyChild(root, NS.protocol, 'RequestedAuthnContext');
  if (!requested) return false;
  const refs = requested.getElementsByTagNameNS(NS.assertion, 'AuthnContextClassRef');
  for (let i = 0; i < refs.length; i++) if (refs.item(i)?.textContent?.trim() === REFEDS_MFA) return true;
  return false;
}
