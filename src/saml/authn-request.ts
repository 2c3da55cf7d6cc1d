/**
 * An SP's AuthnRequest as the SSO endpoint receives it (SAML Profiles §4.1.4.1; SAML Core §3.4.1),
 * in either binding: HTTP-Redirect (SAML Bindings §3.4: base64 of the DEFLATE'd request in the
 * query, its signature in `Signature`/`SigAlg`) or HTTP-POST (§3.5: base64 of the request in a form,
 * an enveloped signature). Checked in this order, every refusal before anything is stored:
 * sizes (the encoded and the inflated request), the XML (xml.ts: no DTD, one root), an
 * AuthnRequest of version 2.0 with an ID and IssueInstant within `REQUEST_MAX_AGE`, its Issuer a
 * registered SP, the signature (verified when present, required when the SP requires it; a POSTed
 * request is read from the XML its signature covers), Destination (this SSO URL; required when
 * signed, SAML Bindings §3.4.5.2, §3.5.5.2), the ACS (registered, exactly), RelayState (80 bytes,
 * SAML Bindings §3.4.3, §3.5.3). The replay of an ID is the service's check (saml-service.ts).
 */
import { inflateRawSync } from 'node:zlib';
import { POST_BINDING, type ServiceProvider, type ServiceProviders } from './service-providers.js';
import { formDecode } from './query.js';
import { hasEnvelopedSignature, verifyEnvelopedSignature, verifyRedirectSignature } from './signatures.js';
import { attr, NS, onlyChild, parseUntrusted, textOf, XmlRefused } from './xml.js';

/** The most characters of an encoded SAMLRequest (either binding). */
export const MAX_ENCODED_REQUEST = 64 * 1024;
/** The most bytes of a request once decoded (and inflated): a request is a few kilobytes. */
export const MAX_REQUEST_BYTES = 64 * 1024;
/** The most bytes of RelayState (SAML Bindings §3.4.3, §3.5.3). */
export const MAX_RELAY_STATE_BYTES = 80;
/** How old a request's IssueInstant may be, seconds; its ID is remembered this long and a little more. */
export const REQUEST_MAX_AGE = 600;
/** How far ahead of Sigil's clock an IssueInstant may be, seconds. */
export const CLOCK_SKEW = 120;
/** The longest request ID accepted. */
const MAX_ID_LENGTH = 256;

/** The NameID format URIs (SAML Core §8.3) of each configured `nameIdFormat`. */
export const NAME_ID_FORMATS = {
  persistent: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
  emailAddress: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
  transient: 'urn:oasis:names:tc:SAML:2.0:nameid-format:transient',
  unspecified: 'urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified',
} as const;

/** The REFEDS MFA Profile's context class: an SP asking for it gets a second factor (step-up). */
export const REFEDS_MFA = 'https://refeds.org/profile/mfa';

/** A request in the binding it came in: the query's parameters still URL-encoded, or the form's. */
export type BindingMessage =
  | { binding: 'redirect'; raw: Readonly<Record<string, string>> }
  | { binding: 'post'; form: { SAMLRequest?: string | undefined; RelayState?: string | undefined } };

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
  const { xml, relayState } = decode(message);
  const doc = parseUntrusted(xml, MAX_REQUEST_BYTES);
  let root = authnRequestOf(doc.documentElement);
  const sp = sps.get(textOf(onlyChild(root, NS.assertion, 'Issuer')) ?? '');
  if (!sp) throw new SamlRefused('the service provider is not registered');
  let signed = false;
  if (message.binding === 'redirect') {
    // SAML Bindings §3.4.4.1: a signature travels in the query; one left in the XML is not accepted.
    if (hasEnvelopedSignature(doc)) throw new SamlRefused('a redirected request carries its signature in the query');
    if (message.raw.Signature !== undefined) {
      if (sp.certificates.length === 0) throw new SamlRefused('the service provider has no signing certificate');
      verifyRedirectSignature(message.raw, sp.certificates);
      signed = true;
    }
  } else if (hasEnvelopedSignature(doc)) {
    if (sp.certificates.length === 0) throw new SamlRefused('the service provider has no signing certificate');
    const signedXml = verifyEnvelopedSignature(xml, doc, sp.certificates);
    const again = authnRequestOf(parseUntrusted(signedXml, MAX_REQUEST_BYTES).documentElement);
    if (attr(again, 'ID') !== attr(root, 'ID')) throw new SamlRefused('the signature does not cover the request');
    // From here on, only what the signature covers is read.
    root = again;
    if (textOf(onlyChild(root, NS.assertion, 'Issuer')) !== sp.entityId)
      throw new SamlRefused('the signature does not cover the request');
    signed = true;
  }
  if (sp.requireSignedAuthnRequests && !signed) throw new SamlRefused('the service provider must sign its requests');
  return checked(root, sp, { relayState, signed, ssoUrl, now });
}

/** The checks of a request whose signature is settled. */
function checked(
  root: Element,
  sp: ServiceProvider,
  at: { relayState: string | undefined; signed: boolean; ssoUrl: string; now: number },
): AuthnRequest {
  const id = attr(root, 'ID') ?? '';
  if (!/^[A-Za-z_][\w.-]*$/.test(id) || id.length > MAX_ID_LENGTH) throw new SamlRefused('the request has no valid ID');
  const issued = Date.parse(attr(root, 'IssueInstant') ?? '') / 1000;
  if (!Number.isFinite(issued) || issued > at.now + CLOCK_SKEW || issued < at.now - REQUEST_MAX_AGE)
    throw new SamlRefused('the request is not fresh');
  const destination = attr(root, 'Destination');
  if (destination !== undefined ? destination !== at.ssoUrl : at.signed)
    throw new SamlRefused('the request is for another destination');
  const relay = at.relayState;
  if (relay !== undefined && Buffer.byteLength(relay) > MAX_RELAY_STATE_BYTES)
    throw new SamlRefused('RelayState is longer than 80 bytes');
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

/** The root as an AuthnRequest of SAML 2.0. */
function authnRequestOf(root: Element): Element {
  if (root.namespaceURI !== NS.protocol || root.localName !== 'AuthnRequest')
    throw new SamlRefused('the message is not an AuthnRequest');
  if (attr(root, 'Version') !== '2.0') throw new SamlRefused('the request is not SAML 2.0');
  return root;
}

/** The request's XML text and RelayState from the binding, within the size bounds. */
function decode(message: BindingMessage): { xml: string; relayState: string | undefined } {
  if (message.binding === 'redirect') {
    const relay = message.raw.RelayState;
    return {
      xml: inflated(base64(formDecode(message.raw.SAMLRequest ?? ''))),
      relayState: relay === undefined ? undefined : formDecode(relay),
    };
  }
  const xml = base64(message.form.SAMLRequest ?? '').toString('utf8');
  return { xml, relayState: message.form.RelayState };
}

/** Decodes base64 (whitespace allowed, as some SPs wrap it), within `MAX_ENCODED_REQUEST`. */
function base64(value: string): Buffer {
  const compact = value.replace(/\s+/g, '');
  if (compact === '') throw new SamlRefused('SAMLRequest is missing');
  if (compact.length > MAX_ENCODED_REQUEST || !/^[A-Za-z0-9+/]+={0,2}$/.test(compact))
    throw new SamlRefused('SAMLRequest is too large or not base64');
  return Buffer.from(compact, 'base64');
}

/** Inflates a DEFLATE'd request (RFC 1951), stopping at `MAX_REQUEST_BYTES`. */
function inflated(deflated: Buffer): string {
  try {
    return inflateRawSync(deflated, { maxOutputLength: MAX_REQUEST_BYTES }).toString('utf8');
  } catch {
    throw new SamlRefused('SAMLRequest cannot be inflated or is too large');
  }
}
