/**
 * Single logout over the SOAP binding (SAML Bindings §3.2; Profiles §4.4.3.3, §4.4.4): when a
 * session ends without its browser, Sigil POSTs each SP's SOAP SingleLogoutService a SOAP 1.1
 * envelope holding its signed LogoutRequest, and reads the SP's LogoutResponse from the HTTP answer.
 * The request goes under the SSRF guard (http/outbound.ts: https, or http to loopback only with
 * `allowLoopback`; no private or other special-use address; no redirect followed; one deadline),
 * and the answer is read up to `MAX_SOAP_ANSWER_BYTES`, as untrusted XML (xml.ts). The
 * LogoutResponse must be the Body's only element, signed by the SP (Profiles §4.4.4.2: the SOAP
 * binding over plain TLS does not authenticate the SP to Sigil) with a certificate of its metadata
 * (signatures.ts: the element's own enveloped signature, read from what the signature covers),
 * from the SP, fresh, and answer the request sent (InResponseTo).
 */
import { guardedPostReading, OutboundRefused } from '../http/outbound.js';
import type { DeliveryFailure } from '../logout/delivery.js';
import { checkIdAndTime } from './message.js';
import { fillLogoutRequest, type LogoutRequestFacts } from './logout-messages.js';
import { STATUS } from './response.js';
import type { ServiceProvider } from './service-providers.js';
import { type SamlSigner, signElement, verifyEnvelopedSignature } from './signatures.js';
import {
  addElement,
  attr,
  children,
  childrenNamed,
  newDocument,
  NS,
  onlyChild,
  parseUntrusted,
  serialize,
  textOf,
  XmlRefused,
} from './xml.js';

/** The SOAP 1.1 envelope namespace (SAML Bindings §3.2.2: SOAP 1.1). */
export const SOAP_ENVELOPE_NS = 'http://schemas.xmlsoap.org/soap/envelope/';
/** The most bytes of an SP's answer read: a LogoutResponse is a few kilobytes. */
export const MAX_SOAP_ANSWER_BYTES = 64 * 1024;
/** The SOAPAction SAML Bindings §3.2.3.3 suggests. */
const SOAP_ACTION = 'http://www.oasis-open.org/committees/security';
/** XPath of the LogoutRequest in Sigil's envelope, the element signed. */
const REQUEST_PATH = "/*[local-name(.)='Envelope']/*[local-name(.)='Body']/*[local-name(.)='LogoutRequest']";

/** Sigil's LogoutRequest in a SOAP envelope, the request signed (enveloped, after its Issuer). */
export function soapLogoutRequest(facts: LogoutRequestFacts, signer: SamlSigner): string {
  const doc = newDocument(SOAP_ENVELOPE_NS, 'SOAP-ENV:Envelope');
  const body = addElement(doc.documentElement, SOAP_ENVELOPE_NS, 'SOAP-ENV:Body');
  fillLogoutRequest(addElement(body, NS.protocol, 'samlp:LogoutRequest'), facts);
  return signElement(serialize(doc), REQUEST_PATH, signer);
}

/**
 * POSTs the envelope to the SP's SOAP endpoint and reads its answer (see the module comment).
 * @param requestId the LogoutRequest's ID, which the answer's InResponseTo must name
 * @param now Unix seconds
 * @returns the SP's Success status, or the failure: to be retried when no answer came
 *   (unreachable, refused by the guard, too slow or too large, a 5xx, 408 or 429), final when the
 *   SP answered and its answer is refused or of another status (named in the message); never
 *   throws for anything the SP or the network does
 */
export async function exchangeSoapLogout(
  url: string,
  envelope: string,
  sp: ServiceProvider,
  requestId: string,
  limits: { timeoutMs: number; allowLoopback: boolean },
  now: number,
): Promise<{ status: string } | DeliveryFailure> {
  let answer: Awaited<ReturnType<typeof guardedPostReading>>;
  try {
    answer = await guardedPostReading(
      new URL(url),
      envelope,
      { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${SOAP_ACTION}"` },
      { ...limits, maxBytes: MAX_SOAP_ANSWER_BYTES },
    );
  } catch (err) {
    return { message: err instanceof OutboundRefused ? err.message : 'no answer', final: false };
  }
  if (answer.status < 200 || answer.status >= 300) {
    const retry = answer.status >= 500 || answer.status === 408 || answer.status === 429;
    return { message: `HTTP ${answer.status}`, final: !retry };
  }
  let status: string;
  try {
    status = readSoapLogoutResponse(answer.body.toString('utf8'), sp, requestId, now);
  } catch (err) {
    if (err instanceof XmlRefused) return { message: `the answer is refused: ${err.message}`, final: true };
    throw err;
  }
  return status === STATUS.success ? { status } : { message: `the service provider answered ${status}`, final: true };
}

/**
 * Reads the SP's SOAP answer (see the module comment).
 * @returns the top-level status code
 * @throws XmlRefused when it is not a SOAP envelope whose Body holds one LogoutResponse signed by
 *   the SP, from the SP, fresh, in response to `requestId`.
 */
export function readSoapLogoutResponse(xml: string, sp: ServiceProvider, requestId: string, now: number): string {
  const doc = parseUntrusted(xml, MAX_SOAP_ANSWER_BYTES);
  const envelope = doc.documentElement;
  if (envelope.namespaceURI !== SOAP_ENVELOPE_NS || envelope.localName !== 'Envelope')
    throw new XmlRefused('the answer is not a SOAP envelope');
  const body = onlyChild(envelope, SOAP_ENVELOPE_NS, 'Body');
  const [message, ...others] = body ? children(body) : [];
  if (!message || others.length > 0) throw new XmlRefused('the SOAP Body must hold one message');
  if (message.namespaceURI === SOAP_ENVELOPE_NS && message.localName === 'Fault')
    throw new XmlRefused('the service provider answered with a SOAP fault');
  logoutResponseOf(message);
  if (childrenNamed(message, NS.dsig, 'Signature').length === 0)
    throw new XmlRefused('the service provider must sign its logout responses');
  if (sp.certificates.length === 0) throw new XmlRefused('the service provider has no signing certificate');
  const signed = verifyEnvelopedSignature(xml, doc, sp.certificates, message);
  // From here on, only what the signature covers is read.
  const root = logoutResponseOf(parseUntrusted(signed, MAX_SOAP_ANSWER_BYTES).documentElement);
  if (attr(root, 'ID') !== attr(message, 'ID')) throw new XmlRefused('the signature does not cover the message');
  if (textOf(onlyChild(root, NS.assertion, 'Issuer')) !== sp.entityId)
    throw new XmlRefused('the logout response is not from the service provider');
  checkIdAndTime(root, { signed: true, now });
  if (attr(root, 'InResponseTo') !== requestId) throw new XmlRefused('the logout response answers another request');
  const status = onlyChild(root, NS.protocol, 'Status');
  const code = status && onlyChild(status, NS.protocol, 'StatusCode');
  const value = code && attr(code, 'Value');
  if (!value) throw new XmlRefused('the logout response has no status');
  return value;
}

/** The element as a SAML 2.0 LogoutResponse. */
function logoutResponseOf(el: Element): Element {
  if (el.namespaceURI !== NS.protocol || el.localName !== 'LogoutResponse')
    throw new XmlRefused('the answer is not a LogoutResponse');
  if (attr(el, 'Version') !== '2.0') throw new XmlRefused('the message is not SAML 2.0');
  return el;
}
