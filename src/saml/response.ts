/**
 * Sigil's SAML Response (SAML Core §3.2.2, §3.3.3; Web Browser SSO Profile, SAML Profiles §4.1.4.2),
 * built with the DOM (xml.ts) so that no value becomes markup, then signed (signatures.ts): the
 * Assertion first, then the Response around it, as the SP's settings ask. A success carries one
 * Assertion: Issuer, Subject (NameID; a bearer SubjectConfirmation with Recipient, NotOnOrAfter and
 * InResponseTo), Conditions (NotBefore, NotOnOrAfter, the SP as the only Audience), an
 * AuthnStatement (AuthnInstant, SessionIndex, the authentication context class) and the
 * attributes. Any other status carries no assertion (§3.2.2.2). For an SP that asks for it, the
 * signed Assertion is then encrypted to it (encryption.ts) before the Response is signed around the
 * EncryptedAssertion.
 */
import { randomBytes } from 'node:crypto';
import { encryptAssertion } from './encryption.js';
import { type SamlSigner, signElement } from './signatures.js';
import { addElement, newDocument, NS, serialize } from './xml.js';

/** Top-level status codes (SAML Core §3.2.2.2). */
export const STATUS = {
  success: 'urn:oasis:names:tc:SAML:2.0:status:Success',
  requester: 'urn:oasis:names:tc:SAML:2.0:status:Requester',
  responder: 'urn:oasis:names:tc:SAML:2.0:status:Responder',
  noPassive: 'urn:oasis:names:tc:SAML:2.0:status:NoPassive',
  invalidNameIdPolicy: 'urn:oasis:names:tc:SAML:2.0:status:InvalidNameIDPolicy',
  requestDenied: 'urn:oasis:names:tc:SAML:2.0:status:RequestDenied',
  authnFailed: 'urn:oasis:names:tc:SAML:2.0:status:AuthnFailed',
} as const;

/** Authentication context classes (SAML Authn Context §3.4; REFEDS MFA Profile). */
export const AUTHN_CONTEXT = {
  password: 'urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport',
  mfa: 'https://refeds.org/profile/mfa',
  unspecified: 'urn:oasis:names:tc:SAML:2.0:ac:classes:unspecified',
} as const;

const BEARER = 'urn:oasis:names:tc:SAML:2.0:cm:bearer';
const BASIC_NAME = 'urn:oasis:names:tc:SAML:2.0:attrname-format:basic';
const URI_NAME = 'urn:oasis:names:tc:SAML:2.0:attrname-format:uri';

/** What the Assertion says about the signed-in user. */
export interface AssertionFacts {
  nameId: { value: string; format: string; spNameQualifier?: string };
  /** When the user signed in, Unix seconds. */
  authTime: number;
  /** The Sigil session's index at the SP (its `sid`, for Single Logout). */
  sessionIndex: string;
  /** When the Sigil session ends, Unix seconds. */
  sessionNotOnOrAfter: number;
  /** An `AUTHN_CONTEXT` class. */
  authnContext: string;
  /** Attribute name → values, in order. */
  attributes: { name: string; values: string[] }[];
}

/** Everything a Response is made of. */
export interface ResponseFacts {
  /** Sigil's entity ID (the issuer). */
  issuer: string;
  /** The ACS URL the Response is posted to (Destination, Recipient). */
  destination: string;
  /** The SP's entity ID (Audience). */
  audience: string;
  /** The request's ID; absent for an IdP-initiated Response. */
  inResponseTo?: string;
  /** Unix seconds. */
  now: number;
  /** `saml.assertionLifetime`, seconds. */
  lifetime: number;
  status: { code: string; subCode?: string; message?: string };
  assertion?: AssertionFacts;
  sign: { response: boolean; assertion: boolean };
  /** The SP's encryption certificate (base64 DER, RSA) when the assertion goes encrypted. */
  encryptTo?: string;
}

/** An `xs:ID` (an NCName: never starting with a digit), 160 random bits. */
export function newSamlId(): string {
  return `_${randomBytes(20).toString('hex')}`;
}

/** Unix seconds as `xs:dateTime` in UTC without fractions (SAML Core §1.3.3). */
export function instant(seconds: number): string {
  return new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * The Response as XML text, signed as `facts.sign` asks (by `signer`; a Response with an assertion
 * is never left unsigned: SAML Profiles §4.1.3.5), its assertion encrypted to `facts.encryptTo`
 * when given (after the Assertion's signature, before the Response's).
 * @throws Error when a signature is asked for and there is no signer
 */
export async function buildResponse(facts: ResponseFacts, signer: SamlSigner | undefined): Promise<string> {
  const doc = newDocument(NS.protocol, 'samlp:Response');
  const response = doc.documentElement;
  response.setAttribute('xmlns:saml', NS.assertion);
  response.setAttribute('ID', newSamlId());
  response.setAttribute('Version', '2.0');
  response.setAttribute('IssueInstant', instant(facts.now));
  response.setAttribute('Destination', facts.destination);
  if (facts.inResponseTo !== undefined) response.setAttribute('InResponseTo', facts.inResponseTo);
  addElement(response, NS.assertion, 'saml:Issuer', {}, facts.issuer);
  const status = addElement(response, NS.protocol, 'samlp:Status');
  const code = addElement(status, NS.protocol, 'samlp:StatusCode', { Value: facts.status.code });
  if (facts.status.subCode) addElement(code, NS.protocol, 'samlp:StatusCode', { Value: facts.status.subCode });
  if (facts.status.message) addElement(status, NS.protocol, 'samlp:StatusMessage', {}, facts.status.message);
  if (facts.assertion) addAssertion(response, facts, facts.assertion);
  let xml = serialize(doc);
  const wantsSignature = facts.assertion !== undefined && (facts.sign.assertion || facts.sign.response);
  if (!wantsSignature) return xml;
  if (!signer) throw new Error('no SAML signing key');
  if (facts.sign.assertion) xml = signElement(xml, "/*/*[local-name(.)='Assertion']", signer);
  if (facts.encryptTo !== undefined) xml = await encryptAssertion(xml, facts.encryptTo);
  if (facts.sign.response) xml = signElement(xml, '/*', signer);
  return xml;
}

function addAssertion(response: Element, facts: ResponseFacts, a: AssertionFacts): void {
  const notOnOrAfter = instant(facts.now + facts.lifetime);
  const assertion = addElement(response, NS.assertion, 'saml:Assertion', {
    ID: newSamlId(),
    Version: '2.0',
    IssueInstant: instant(facts.now),
  });
  addElement(assertion, NS.assertion, 'saml:Issuer', {}, facts.issuer);
  const subject = addElement(assertion, NS.assertion, 'saml:Subject');
  addElement(
    subject,
    NS.assertion,
    'saml:NameID',
    { Format: a.nameId.format, SPNameQualifier: a.nameId.spNameQualifier },
    a.nameId.value,
  );
  const confirmation = addElement(subject, NS.assertion, 'saml:SubjectConfirmation', { Method: BEARER });
  addElement(confirmation, NS.assertion, 'saml:SubjectConfirmationData', {
    Recipient: facts.destination,
    NotOnOrAfter: notOnOrAfter,
    InResponseTo: facts.inResponseTo,
  });
  const conditions = addElement(assertion, NS.assertion, 'saml:Conditions', {
    NotBefore: instant(facts.now),
    NotOnOrAfter: notOnOrAfter,
  });
  const audience = addElement(conditions, NS.assertion, 'saml:AudienceRestriction');
  addElement(audience, NS.assertion, 'saml:Audience', {}, facts.audience);
  const statement = addElement(assertion, NS.assertion, 'saml:AuthnStatement', {
    AuthnInstant: instant(a.authTime),
    SessionIndex: a.sessionIndex,
    SessionNotOnOrAfter: instant(a.sessionNotOnOrAfter),
  });
  const context = addElement(statement, NS.assertion, 'saml:AuthnContext');
  addElement(context, NS.assertion, 'saml:AuthnContextClassRef', {}, a.authnContext);
  const attributes = a.attributes.filter((attr) => attr.values.length > 0);
  if (attributes.length === 0) return;
  const attributeStatement = addElement(assertion, NS.assertion, 'saml:AttributeStatement');
  attributeStatement.setAttribute('xmlns:xs', NS.xs);
  attributeStatement.setAttribute('xmlns:xsi', NS.xsi);
  for (const { name, values } of attributes) {
    const attribute = addElement(attributeStatement, NS.assertion, 'saml:Attribute', {
      Name: name,
      NameFormat: /^[a-z][a-z0-9+.-]*:/i.test(name) ? URI_NAME : BASIC_NAME,
    });
    for (const value of values) {
      const el = addElement(attribute, NS.assertion, 'saml:AttributeValue', {}, value);
      el.setAttributeNS(NS.xsi, 'xsi:type', 'xs:string');
    }
  }
}
