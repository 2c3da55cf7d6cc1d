/**
 * The two browser bindings every SAML message of Sigil's travels in, both ways: HTTP-Redirect
 * (SAML Bindings §3.4: the message DEFLATE'd and base64'd in the query, its signature over the
 * query's octets in `Signature`/`SigAlg`, §3.4.4.1) and HTTP-POST (§3.5: base64 of the message in
 * a form, its signature enveloped in the XML). Reading bounds every size (the encoded message, the
 * inflated one, RelayState); writing signs a redirected message's query with Sigil's key.
 */
import { createSign } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { formDecode } from './query.js';
import type { SamlSigner } from './signatures.js';
import { SIGNATURE_ALGORITHMS } from './signatures.js';
import { XmlRefused } from './xml.js';

/** The most characters of an encoded SAMLRequest or SAMLResponse (either binding). */
export const MAX_ENCODED_MESSAGE = 64 * 1024;
/** The most bytes of a message once decoded (and inflated): a request or a logout response is a few kilobytes. */
export const MAX_MESSAGE_BYTES = 64 * 1024;
/** The most bytes of RelayState (SAML Bindings §3.4.3, §3.5.3). */
export const MAX_RELAY_STATE_BYTES = 80;

/** Which form field or query parameter carries the message. */
export type MessageField = 'SAMLRequest' | 'SAMLResponse';

/** A message in the binding it came in: the query's parameters still URL-encoded, or the form's. */
export type BindingMessage =
  | { binding: 'redirect'; raw: Readonly<Record<string, string>> }
  | {
      binding: 'post';
      form: { SAMLRequest?: string | undefined; SAMLResponse?: string | undefined; RelayState?: string | undefined };
    };

/** A message of Sigil's on its way through the browser: a redirect, or an auto-posted form. */
export type OutgoingMessage =
  | { binding: 'redirect'; url: string }
  | { binding: 'post'; url: string; fields: Record<string, string> };

/**
 * The message's XML text and RelayState from the binding (`field` carries it).
 * @throws XmlRefused when it is missing, not base64, too large (encoded or inflated), cannot be
 *   inflated, or RelayState is longer than 80 bytes.
 */
export function decodeMessage(
  message: BindingMessage,
  field: MessageField,
): { xml: string; relayState: string | undefined } {
  let xml: string;
  let relayState: string | undefined;
  if (message.binding === 'redirect') {
    xml = inflated(base64(formDecode(message.raw[field] ?? ''), field));
    relayState = message.raw.RelayState === undefined ? undefined : formDecode(message.raw.RelayState);
  } else {
    xml = base64(message.form[field] ?? '', field).toString('utf8');
    relayState = message.form.RelayState;
  }
  if (relayState !== undefined && Buffer.byteLength(relayState) > MAX_RELAY_STATE_BYTES)
    throw new XmlRefused('RelayState is longer than 80 bytes');
  return { xml, relayState };
}

/** Decodes base64 (whitespace allowed, as some SPs wrap it), within `MAX_ENCODED_MESSAGE`. */
function base64(value: string, field: MessageField): Buffer {
  const compact = value.replace(/\s+/g, '');
  if (compact === '') throw new XmlRefused(`${field} is missing`);
  if (compact.length > MAX_ENCODED_MESSAGE || !/^[A-Za-z0-9+/]+={0,2}$/.test(compact))
    throw new XmlRefused(`${field} is too large or not base64`);
  return Buffer.from(compact, 'base64');
}

/** Inflates a DEFLATE'd message (RFC 1951), stopping at `MAX_MESSAGE_BYTES`. */
function inflated(deflated: Buffer): string {
  try {
    return inflateRawSync(deflated, { maxOutputLength: MAX_MESSAGE_BYTES }).toString('utf8');
  } catch {
    throw new XmlRefused('the message cannot be inflated or is too large');
  }
}

/**
 * A message of Sigil's in the HTTP-Redirect binding (SAML Bindings §3.4.4): DEFLATE, base64,
 * URL-encoded into `location`'s query, signed over `field=…&RelayState=…&SigAlg=…` with Sigil's
 * key (§3.4.4.1). The XML carries no signature of its own in this binding.
 */
export function redirectMessage(
  location: string,
  field: MessageField,
  xml: string,
  relayState: string | undefined,
  signer: SamlSigner,
): OutgoingMessage {
  const parts = [`${field}=${encodeURIComponent(deflateRawSync(Buffer.from(xml, 'utf8')).toString('base64'))}`];
  if (relayState !== undefined) parts.push(`RelayState=${encodeURIComponent(relayState)}`);
  parts.push(`SigAlg=${encodeURIComponent(signer.algorithm)}`);
  const hash = SIGNATURE_ALGORITHMS[signer.algorithm] === 'sha512' ? 'RSA-SHA512' : 'RSA-SHA256';
  const signature = createSign(hash).update(parts.join('&'), 'utf8').sign(signer.privateKey, 'base64');
  parts.push(`Signature=${encodeURIComponent(signature)}`);
  return { binding: 'redirect', url: `${location}${location.includes('?') ? '&' : '?'}${parts.join('&')}` };
}

/** A message of Sigil's in the HTTP-POST binding (SAML Bindings §3.5.4): the form's fields. */
export function postMessage(
  location: string,
  field: MessageField,
  xml: string,
  relayState: string | undefined,
): OutgoingMessage {
  return {
    binding: 'post',
    url: location,
    fields: {
      [field]: Buffer.from(xml, 'utf8').toString('base64'),
      ...(relayState !== undefined ? { RelayState: relayState } : {}),
    },
  };
}
