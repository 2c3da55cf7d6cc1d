/**
 * What every SAML protocol message an SP sends to Sigil goes through before its own checks
 * (AuthnRequest at /saml/sso; LogoutRequest and LogoutResponse at /saml/slo), in this order: the
 * binding's sizes (binding.ts), the XML (xml.ts: no DTD, one root, bounded), the root element's
 * name and SAML version, its Issuer a registered SP, and the signature, verified when present:
 * in the query for HTTP-Redirect (SAML Bindings §3.4.4.1, none allowed in the XML), enveloped for
 * HTTP-POST, after which only what the signature covers is read (signatures.ts). Then
 * `checkIdAndTime`: an ID, an IssueInstant within `REQUEST_MAX_AGE`, and the Destination (required
 * when signed, SAML Bindings §3.4.5.2, §3.5.5.2).
 */
import { type BindingMessage, decodeMessage, MAX_MESSAGE_BYTES, type MessageField } from './binding.js';
import type { ServiceProvider, ServiceProviders } from './service-providers.js';
import { hasEnvelopedSignature, verifyEnvelopedSignature, verifyRedirectSignature } from './signatures.js';
import { attr, NS, onlyChild, parseUntrusted, textOf, XmlRefused } from './xml.js';

/** How old a message's IssueInstant may be, seconds; a request's ID is remembered this long and a little more. */
export const REQUEST_MAX_AGE = 600;
/** How far ahead of Sigil's clock an IssueInstant may be, seconds. */
export const CLOCK_SKEW = 120;
/** The longest message ID accepted. */
const MAX_ID_LENGTH = 256;

/** A message whose SP and signature are settled. */
export interface ReceivedMessage {
  /** The root element: of the signed XML when the message was signed in the XML. */
  root: Element;
  sp: ServiceProvider;
  /** Signed in the query or in the XML, and verified with one of the SP's certificates. */
  signed: boolean;
  relayState: string | undefined;
}

/**
 * Reads a message of the protocol element `local` (see the module comment).
 * @param field the query parameter or form field that carries it
 * @throws XmlRefused for every refusal, its message fit for the error page (no input echoed).
 */
export function receiveMessage(
  message: BindingMessage,
  field: MessageField,
  local: 'AuthnRequest' | 'LogoutRequest' | 'LogoutResponse',
  sps: ServiceProviders,
): ReceivedMessage {
  const { xml, relayState } = decodeMessage(message, field);
  const doc = parseUntrusted(xml, MAX_MESSAGE_BYTES);
  let root = rootOf(doc.documentElement, local);
  const sp = sps.get(textOf(onlyChild(root, NS.assertion, 'Issuer')) ?? '');
  if (!sp) throw new XmlRefused('the service provider is not registered');
  let signed = false;
  if (message.binding === 'redirect') {
    // SAML Bindings §3.4.4.1: a signature travels in the query; one left in the XML is not accepted.
    if (hasEnvelopedSignature(doc)) throw new XmlRefused('a redirected message carries its signature in the query');
    if (message.raw.Signature !== undefined) {
      if (sp.certificates.length === 0) throw new XmlRefused('the service provider has no signing certificate');
      verifyRedirectSignature(message.raw, field, sp.certificates);
      signed = true;
    }
  } else if (hasEnvelopedSignature(doc)) {
    if (sp.certificates.length === 0) throw new XmlRefused('the service provider has no signing certificate');
    const signedXml = verifyEnvelopedSignature(xml, doc, sp.certificates);
    const again = rootOf(parseUntrusted(signedXml, MAX_MESSAGE_BYTES).documentElement, local);
    if (attr(again, 'ID') !== attr(root, 'ID')) throw new XmlRefused('the signature does not cover the message');
    // From here on, only what the signature covers is read.
    root = again;
    if (textOf(onlyChild(root, NS.assertion, 'Issuer')) !== sp.entityId)
      throw new XmlRefused('the signature does not cover the message');
    signed = true;
  }
  return { root, sp, signed, relayState };
}

/**
 * Checks a message's ID, IssueInstant (within `REQUEST_MAX_AGE`, at most `CLOCK_SKEW` ahead) and
 * Destination (`destination` exactly; required when signed). Without `destination` (an answer over
 * SOAP, which comes back on the connection Sigil opened, SAML Bindings §3.2.3.3) it is not read.
 * @param now Unix seconds
 * @returns the ID
 * @throws XmlRefused when one of them is wrong.
 */
export function checkIdAndTime(root: Element, at: { destination?: string; signed: boolean; now: number }): string {
  const id = attr(root, 'ID') ?? '';
  if (!/^[A-Za-z_][\w.-]*$/.test(id) || id.length > MAX_ID_LENGTH) throw new XmlRefused('the message has no valid ID');
  const issued = Date.parse(attr(root, 'IssueInstant') ?? '') / 1000;
  if (!Number.isFinite(issued) || issued > at.now + CLOCK_SKEW || issued < at.now - REQUEST_MAX_AGE)
    throw new XmlRefused('the message is not fresh');
  const destination = attr(root, 'Destination');
  if (at.destination === undefined) return id;
  if (destination !== undefined ? destination !== at.destination : at.signed)
    throw new XmlRefused('the message is for another destination');
  return id;
}

/** The root as the protocol element `local` of SAML 2.0. */
function rootOf(root: Element, local: string): Element {
  if (root.namespaceURI !== NS.protocol || root.localName !== local)
    throw new XmlRefused(`the message is not a ${local}`);
  if (attr(root, 'Version') !== '2.0') throw new XmlRefused('the message is not SAML 2.0');
  return root;
}
