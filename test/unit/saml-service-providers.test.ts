/**
 * SAML service providers from the config file: what their metadataXml gives (ACS URLs in default
 * and index order, certificates, AuthnRequestsSigned and WantAssertionsSigned making the settings
 * stricter), and the metadata refused at start with the SP's path: a DTD, another entityID, an
 * ACS over plain http to another host, an unreadable certificate, no ACS at all.
 */
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.js';
import { ConfigError } from '../../src/config/loader.js';
import { ServiceProviders } from '../../src/saml/service-providers.js';
import { spKeys, spMetadata } from '../saml-helpers.js';

const ENTITY = 'https://sp.example/metadata';

function providers(sps: unknown[]): ServiceProviders {
  const cfg = configSchema.parse({ samlServiceProviders: sps });
  return new ServiceProviders(cfg.samlServiceProviders);
}

function refusal(sps: unknown[]): string {
  try {
    providers(sps);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.join('\n');
    throw err;
  }
  return 'accepted';
}

describe('SAML service providers', () => {
  it('takes the single logout endpoint from the config, else the metadata (HTTP-Redirect first, its ResponseLocation)', () => {
    const acs = ['https://sp.example/acs'];
    const both = spMetadata(ENTITY, acs, undefined, {
      slo: { url: 'https://sp.example/slo-post', binding: 'post' },
    }).replace(
      '<md:AssertionConsumerService',
      '<md:SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://sp.example/slo" ResponseLocation="https://sp.example/slo-done"/><md:AssertionConsumerService',
    );
    expect(providers([{ entityId: ENTITY, metadataXml: both }]).get(ENTITY)).toMatchObject({
      sloUrl: 'https://sp.example/slo',
      sloResponseUrl: 'https://sp.example/slo-done',
      sloBinding: 'redirect',
    });
    const postOnly = spMetadata(ENTITY, acs, undefined, {
      slo: { url: 'https://sp.example/slo-post', binding: 'post' },
    });
    expect(providers([{ entityId: ENTITY, metadataXml: postOnly }]).get(ENTITY)).toMatchObject({
      sloUrl: 'https://sp.example/slo-post',
      sloResponseUrl: 'https://sp.example/slo-post',
      sloBinding: 'post',
    });
    const configured = { entityId: ENTITY, metadataXml: postOnly, sloUrl: 'https://sp.example/own' };
    expect(providers([configured]).get(ENTITY)).toMatchObject({
      sloUrl: 'https://sp.example/own',
      sloBinding: 'redirect',
    });
    expect(providers([{ entityId: ENTITY, acsUrls: acs }]).get(ENTITY)).toMatchObject({
      sloUrl: null,
      sloResponseUrl: null,
    });
    const plain = both.replace(
      'ResponseLocation="https://sp.example/slo-done"',
      'ResponseLocation="http://evil.example/"',
    );
    expect(refusal([{ entityId: ENTITY, metadataXml: plain }])).toMatch(/https/);
  });

  it('reads ACS URLs (default first, then by index), and signing requirements from metadata', () => {
    const xml = spMetadata(ENTITY, ['https://sp.example/a', 'https://sp.example/b'], undefined, {
      authnRequestsSigned: true,
    })
      .replace('index="1"', 'index="1" isDefault="true"')
      .replace('AuthnRequestsSigned="true"', 'AuthnRequestsSigned="true" WantAssertionsSigned="true"');
    const sp = providers([{ entityId: ENTITY, metadataXml: xml, signAssertion: false }]).get(ENTITY);
    expect(sp?.acsUrls).toEqual(['https://sp.example/b', 'https://sp.example/a']);
    expect(sp?.acsByIndex.get(0)).toBe('https://sp.example/a');
    expect(sp?.requireSignedAuthnRequests).toBe(true);
    expect(sp?.signAssertion).toBe(true);
  });

  it('configured acsUrls win over the metadata', () => {
    const sp = providers([
      {
        entityId: ENTITY,
        acsUrls: ['https://sp.example/own'],
        metadataXml: spMetadata(ENTITY, ['https://sp.example/a']),
      },
    ]).get(ENTITY);
    expect(sp?.acsUrls).toEqual(['https://sp.example/own']);
  });

  it('refuses metadata with a DTD, of another entity, with a plain http ACS, or an unreadable certificate', () => {
    const good = spMetadata(ENTITY, ['https://sp.example/a']);
    expect(refusal([{ entityId: ENTITY, metadataXml: good }])).toBe('accepted');
    expect(refusal([{ entityId: ENTITY, metadataXml: `<!DOCTYPE x [<!ENTITY e "e">]>${good}` }])).toMatch(
      /samlServiceProviders\[0\]: a DTD is not allowed/,
    );
    expect(refusal([{ entityId: 'https://other.example', metadataXml: good }])).toMatch(/another entityID/);
    expect(refusal([{ entityId: ENTITY, metadataXml: spMetadata(ENTITY, ['http://sp.example/a']) }])).toMatch(/https/);
    expect(
      refusal([{ entityId: ENTITY, metadataXml: spMetadata(ENTITY, ['https://sp.example/a'], 'bm90IGEgY2VydA==') }]),
    ).toMatch(/X509Certificate cannot be read/);
    expect(refusal([{ entityId: ENTITY, metadataXml: spMetadata(ENTITY, []) }])).toMatch(
      /no HTTP-POST AssertionConsumerService/,
    );
  });

  it("encryptAssertion takes the metadata's encryption certificate (or one of no stated use); without one, or an RSA key, the SP is refused at start", async () => {
    const [sign, enc] = [await spKeys(), await spKeys()];
    const acs = ['https://sp.example/acs'];
    const sp = (metadataXml: string) => [{ entityId: ENTITY, metadataXml, encryptAssertion: true }];
    const encrypted = providers(
      sp(spMetadata(ENTITY, acs, sign.certificate, { encryptionCertificate: enc.certificate })),
    );
    expect(encrypted.get(ENTITY)).toMatchObject({
      encryptionCertificate: enc.certificate,
      certificates: [sign.certificate],
      signAssertion: true,
    });
    const unstated = spMetadata(ENTITY, acs, undefined, {
      encryptionCertificate: enc.certificate,
      encryptionUse: null,
    });
    expect(providers(sp(unstated)).get(ENTITY)?.encryptionCertificate).toBe(enc.certificate);
    // Without encryptAssertion, no certificate is taken for it.
    expect(providers([{ entityId: ENTITY, metadataXml: unstated }]).get(ENTITY)?.encryptionCertificate).toBeNull();
    // A signing certificate is not an encryption one.
    expect(refusal(sp(spMetadata(ENTITY, acs, sign.certificate)))).toMatch(
      /^samlServiceProviders\[0\]: encryptAssertion needs an encryption certificate/,
    );
    const ec = Buffer.from(
      new X509Certificate(
        execFileSync(
          'openssl',
          [
            'req',
            '-x509',
            '-newkey',
            'ec',
            '-pkeyopt',
            'ec_paramgen_curve:P-256',
            '-nodes',
            '-keyout',
            '/dev/null',
            '-days',
            '1',
            '-subj',
            '/CN=ec',
          ],
          { stdio: 'pipe' },
        ),
      ).raw,
    ).toString('base64');
    expect(refusal(sp(spMetadata(ENTITY, acs, undefined, { encryptionCertificate: ec })))).toMatch(
      /encryptAssertion needs an RSA key/,
    );
  });

  it('refuses at config check encryption without metadata, metadataUrl beside metadataXml, and a duplicate entityId', () => {
    const parse = (sp: Record<string, unknown>) => configSchema.safeParse({ samlServiceProviders: [sp] });
    const base = { entityId: ENTITY, acsUrls: ['https://sp.example/a'] };
    expect(parse(base).success).toBe(true);
    for (const extra of [
      { metadataUrl: 'https://sp.example/metadata', metadataXml: spMetadata(ENTITY, ['https://sp.example/a']) },
      // Encryption needs the SP's metadata, where its encryption certificate is.
      { encryptAssertion: true },
      { signResponse: false, signAssertion: false },
      { acsUrls: ['http://sp.example/a'] },
    ])
      expect(parse({ ...base, ...extra }).success, JSON.stringify(extra)).toBe(false);
    expect(configSchema.safeParse({ samlServiceProviders: [base, base] }).success).toBe(false);
  });
});
