/**
 * Assertion encryption over HTTP (SAML Core §2.3.4): an SP with `encryptAssertion` gets a Response
 * whose Assertion is an EncryptedAssertion (AES-256-GCM, the key by RSA-OAEP to the encryption
 * certificate of its metadata), with no plaintext Assertion, NameID or attribute value in it; the
 * Response's signature covers the EncryptedAssertion. xmlsec1 with the SP's private key decrypts it
 * and verifies the Assertion's own signature; a changed ciphertext and another key fail to decrypt.
 * An SP without encryption gets its plaintext Assertion from the same server.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DOMParser } from '@xmldom/xmldom';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authorizeClients, Browser, isLoginPage, type Step } from '../authorize-helpers.js';
import { startSigil, type TestSigil } from '../helpers.js';
import {
  attributes,
  authnRequest,
  element,
  metadataCertificates,
  postedResponse,
  redirectPath,
  SP_ACS,
  SP_ENTITY,
  type SpKeys,
  spKeys,
  spMetadata,
  xmlsecVerifies,
} from '../saml-helpers.js';

const ISSUER = 'http://127.0.0.1:5999';
const PLAIN_SP = 'https://plain.example/sp';
const PLAIN_ACS = 'https://plain.example/acs';
const XMLENC = 'http://www.w3.org/2001/04/xmlenc#';

let sigil: TestSigil;
let signing: SpKeys;
let encryption: SpKeys;

beforeAll(async () => {
  signing = await spKeys();
  encryption = await spKeys();
  sigil = await startSigil({
    clients: authorizeClients(),
    saml: { enabled: true },
    samlServiceProviders: [
      {
        entityId: SP_ENTITY,
        metadataXml: spMetadata(SP_ENTITY, [SP_ACS], signing.certificate, {
          encryptionCertificate: encryption.certificate,
        }),
        attributes: { mail: 'email', displayName: 'name' },
        encryptAssertion: true,
        // Asked unsigned: an encrypted Assertion is signed all the same.
        signAssertion: false,
      },
      { entityId: PLAIN_SP, acsUrls: [PLAIN_ACS], attributes: { mail: 'email' } },
    ],
  });
});
afterAll(async () => sigil?.close());

async function signedIn(b: Browser, issuer: string, acs: string): Promise<Step> {
  let step = await b.follow(await b.get(redirectPath(authnRequest(ISSUER, { issuer, acs }))));
  if (isLoginPage(step)) step = await b.follow(await b.submitLogin(step, 'alice', 'alice'));
  return step;
}

/** The Response with its EncryptedData decrypted by xmlsec1 with `keyPem`; undefined when xmlsec1 refuses. */
function xmlsecDecrypts(xml: string, keyPem: string): string | undefined {
  const name = `enc-${Math.random().toString(36).slice(2)}`;
  const file = join(sigil.dir, `${name}.xml`);
  const key = join(sigil.dir, `${name}.key`);
  writeFileSync(file, xml);
  writeFileSync(key, keyPem);
  try {
    return execFileSync('xmlsec1', ['--decrypt', '--privkey-pem', key, file], { stdio: 'pipe', encoding: 'utf8' });
  } catch {
    return undefined;
  }
}

describe('encrypted assertions', () => {
  it('carry no plaintext Assertion; xmlsec1 with the SP key decrypts and verifies the signed Assertion', async () => {
    const b = new Browser(sigil);
    const posted = postedResponse((await signedIn(b, SP_ENTITY, SP_ACS)).body);
    expect(posted.action).toBe(SP_ACS);
    const { xml, doc } = posted;
    expect(element(doc, 'EncryptedAssertion')).toBeDefined();
    expect(element(doc, 'Assertion')).toBeUndefined();
    expect(element(doc, 'NameID')).toBeUndefined();
    expect(xml).not.toContain('alice@example.com');
    expect(xml).not.toContain('Alice Smith');
    expect(xml).not.toContain('AttributeStatement');
    const methods = doc.getElementsByTagNameNS(XMLENC, 'EncryptionMethod');
    expect(Array.from({ length: methods.length }, (_, i) => methods.item(i)?.getAttribute('Algorithm'))).toEqual([
      'http://www.w3.org/2009/xmlenc11#aes256-gcm',
      'http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p',
    ]);
    expect(xml).not.toMatch(/rsa-1_5|tripledes|aes\d+-cbc/);

    const [certificate] = metadataCertificates((await b.get('/saml/metadata')).body);
    // The Response's signature is over the EncryptedAssertion.
    expect(xmlsecVerifies(sigil.dir, xml, certificate as string, 'Response')).toBe(true);

    const decrypted = xmlsecDecrypts(xml, encryption.privateKeyPem);
    expect(decrypted).toBeDefined();
    const plain = new DOMParser().parseFromString(decrypted as string, 'text/xml') as unknown as Document;
    expect(element(plain, 'Assertion')?.parentNode).toBe(element(plain, 'EncryptedAssertion'));
    expect(attributes(plain)).toEqual({ mail: ['alice@example.com'], displayName: ['Alice Smith'] });
    expect(element(plain, 'Audience')?.textContent).toBe(SP_ENTITY);
    expect(xmlsecVerifies(sigil.dir, decrypted as string, certificate as string, 'Assertion')).toBe(true);

    // AES-GCM is authenticated: one changed character of the ciphertext fails decryption.
    const cipherValues = [...xml.matchAll(/<xenc:CipherValue>([^<]+)<\/xenc:CipherValue>/g)];
    const content = cipherValues.at(-1)?.[1] as string;
    const flipped = `${content.slice(0, 40)}${content[40] === 'A' ? 'B' : 'A'}${content.slice(41)}`;
    expect(xmlsecDecrypts(xml.replace(content, flipped), encryption.privateKeyPem)).toBeUndefined();
    // Another key (the SP's signing key) decrypts nothing.
    expect(xmlsecDecrypts(xml, signing.privateKeyPem)).toBeUndefined();
  });

  it('leave an SP without encryptAssertion its plaintext Assertion', async () => {
    const b = new Browser(sigil);
    const posted = postedResponse((await signedIn(b, PLAIN_SP, PLAIN_ACS)).body);
    expect(element(posted.doc, 'EncryptedAssertion')).toBeUndefined();
    expect(attributes(posted.doc)).toEqual({ mail: ['alice@example.com'] });
  });
});
