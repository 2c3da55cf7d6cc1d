/**
 * The SAML 2.0 identity provider's settings (`saml`) and its service providers
 * (`samlServiceProviders`): what an SP is, by its entity ID, where its assertions go (ACS URLs),
 * how its subjects are named (NameID format) and which user claims it gets as attributes. An SP's
 * `metadataXml` (SAML V2.0 Metadata) may give its ACS and SLO URLs and its signing certificates
 * instead; the SAML module reads it (src/saml/), since this layer parses no XML.
 */
import * as z from 'zod';
import { httpsOrLoopback, lifetime, nonEmpty } from './field-kinds.js';

/** The signature algorithms Sigil signs SAML messages with (XML Signature 1.1 §6.4.2; no SHA-1). */
export const SAML_SIGNATURE_ALGORITHMS = ['rsa-sha256', 'rsa-sha512'] as const;
/** The NameID formats an SP may be given (SAML Core §8.3). */
export const SAML_NAME_ID_FORMATS = ['persistent', 'emailAddress', 'transient', 'unspecified'] as const;
/** The longest entity ID, characters (SAML Core §8.3.6: at most 1024). */
export const MAX_ENTITY_ID_LENGTH = 1024;
/** The largest `metadataXml`, characters: one SP's metadata with a few certificates. */
export const MAX_SP_METADATA_LENGTH = 100_000;
/** The most ACS URLs of one SP. */
export const MAX_ACS_URLS = 20;
/** The most attributes one SP may be given. */
export const MAX_SAML_ATTRIBUTES = 100;

/** `saml`: the identity provider as a whole. */
export const saml = z
  .strictObject({
    enabled: z.boolean().default(false).meta({
      description:
        'Serve the SAML 2.0 identity provider: /saml/metadata, /saml/sso, /saml/slo, /saml/initiate (and a signing key with a certificate in the key store)',
    }),
    signatureAlgorithm: z.enum(SAML_SIGNATURE_ALGORITHMS).default('rsa-sha256').meta({
      description: 'How responses and assertions are signed',
      spec: 'XML Signature Syntax and Processing 1.1 §6.4.2',
    }),
    assertionLifetime: lifetime.max(3600).default(300).meta({
      description: "An assertion's validity (Conditions NotOnOrAfter, SubjectConfirmationData NotOnOrAfter), seconds",
      spec: 'SAML Core §2.5.1.2',
    }),
  })
  .default({ enabled: false, signatureAlgorithm: 'rsa-sha256', assertionLifetime: 300 });

/** One SAML service provider of the config file. */
export const samlServiceProvider = z
  .strictObject({
    entityId: nonEmpty.max(MAX_ENTITY_ID_LENGTH).meta({
      description: "The SP's entity ID: the Issuer of its requests and the Audience of its assertions",
      spec: 'SAML Core §8.3.6',
    }),
    acsUrls: z.array(httpsOrLoopback).max(MAX_ACS_URLS).default([]).meta({
      description:
        "Assertion consumer service URLs (HTTP-POST binding), matched exactly; the first is the default. Without them, the metadata's AssertionConsumerService locations (index order)",
      spec: 'SAML Profiles §4.1.4.1',
    }),
    sloUrl: httpsOrLoopback.nullable().default(null).meta({
      description:
        "Single logout URL (HTTP-Redirect binding): LogoutRequests and LogoutResponses go there; else the metadata's SingleLogoutService",
      spec: 'SAML Profiles §4.4',
    }),
    metadataXml: nonEmpty.max(MAX_SP_METADATA_LENGTH).optional().meta({
      description:
        "The SP's SAML metadata (an EntityDescriptor with an SPSSODescriptor): ACS and SLO URLs and signing certificates are read from it; DTDs are refused",
      spec: 'SAML Metadata §2.4.4',
    }),
    metadataUrl: httpsOrLoopback.optional().meta({
      description:
        "Where to fetch the SP's metadata from instead of metadataXml: once, at start, under the SSRF guard (5 s, 100 KB, no redirects, never from private or other special-use addresses; loopback only with clientIdMetadataDocuments.allowLoopback); a failed fetch stops the start",
      spec: 'SAML Metadata §2.4.4',
    }),
    nameIdFormat: z.enum(SAML_NAME_ID_FORMATS).default('persistent').meta({
      description:
        "The subject's NameID: persistent (opaque, stable per SP and user, never the email), emailAddress (the email claim), transient (new at every response), unspecified (the subject id)",
      spec: 'SAML Core §8.3',
    }),
    attributes: z
      .record(nonEmpty.max(256), nonEmpty.max(256))
      .refine((a) => Object.keys(a).length <= MAX_SAML_ATTRIBUTES, `at most ${MAX_SAML_ATTRIBUTES} attributes`)
      .default({})
      .meta({
        description:
          'SAML attribute name → user claim released as its values (an array claim gives several AttributeValues), e.g. { "mail": "email" }',
      }),
    signResponse: z.boolean().default(true).meta({ description: 'Sign the Response' }),
    signAssertion: z.boolean().default(true).meta({ description: 'Sign the Assertion' }),
    encryptAssertion: z.boolean().default(false).meta({
      description:
        "Encrypt the signed assertion to the SP's encryption certificate from its metadata (AES-256-GCM, the key by RSA-OAEP): an EncryptedAssertion; the assertion is then always signed",
      spec: 'SAML Core §2.3.4, XML Encryption 1.1',
    }),
    requireSignedAuthnRequests: z.boolean().default(false).meta({
      description:
        "Refuse AuthnRequests not signed with one of the SP's certificates (from metadataXml); a signed request is verified either way",
      spec: 'SAML Metadata §2.4.4 (AuthnRequestsSigned)',
    }),
    requireConsent: z.boolean().default(false).meta({
      description: 'Ask the user on the consent page before the first assertion goes to this SP (remembered if chosen)',
    }),
    displayName: nonEmpty.max(200).optional().meta({ description: 'The name the login and consent pages show' }),
    organization: nonEmpty.max(64).nullable().default(null).meta({
      description:
        'The name of the organization whose members the SP is for: only they get an assertion (as for a client with organizationUsage require and that organization: membership domain admits a verified email at its domains, arriving through one of its identity providers makes a member); anyone else gets a Response with the status Responder/RequestDenied. The claims org_id, org_name and org_roles may then be mapped in attributes',
    }),
  })
  .superRefine((sp, ctx) => {
    const issue = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
    // Honest refusals: what a later version does is not silently skipped by this one.
    if (sp.metadataUrl !== undefined && sp.metadataXml !== undefined)
      issue('metadataUrl', 'give metadataXml or metadataUrl, not both');
    const metadata = sp.metadataXml !== undefined || sp.metadataUrl !== undefined;
    if (sp.encryptAssertion && !metadata)
      issue('encryptAssertion', "needs metadataXml (or metadataUrl) with the SP's encryption certificate");
    if (sp.acsUrls.length === 0 && !metadata)
      issue('acsUrls', 'an SP needs acsUrls or metadataXml (or metadataUrl) with an AssertionConsumerService');
    if (sp.requireSignedAuthnRequests && !metadata)
      issue('requireSignedAuthnRequests', "needs metadataXml (or metadataUrl) with the SP's signing certificate");
    if (!sp.signResponse && !sp.signAssertion)
      issue('signAssertion', 'the Response or the Assertion must be signed (SAML Profiles §4.1.3.5)');
  });

/** `saml` with its defaults. */
export type SamlConfig = z.output<typeof saml>;
/** One service provider with its defaults. */
export type SamlServiceProviderConfig = z.output<typeof samlServiceProvider>;
