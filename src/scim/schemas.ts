/**
 * What Sigil's SCIM service supports, described as RFC 7643 asks: the schemas of the User and
 * Group resources it serves (§4.1, §4.2, as far as supported: §7 attribute characteristics), the
 * resource types (§6) and the service provider configuration (§5). The same attribute
 * definitions decide case sensitivity (`caseExact`) and mutability in the service.
 */

export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const LIST_RESPONSE = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const SEARCH_REQUEST = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';
const SCHEMA_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Schema';
const RESOURCE_TYPE_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ResourceType';
const SPC_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig';

/** The most resources one list answers (`count` is lowered to it, RFC 7644 §3.4.2.4). */
export const MAX_COUNT = 200;

/** One attribute definition (RFC 7643 §7). */
export interface AttributeDefinition {
  name: string;
  type: 'string' | 'boolean' | 'complex' | 'reference' | 'dateTime';
  multiValued: boolean;
  description: string;
  required: boolean;
  caseExact: boolean;
  mutability: 'readOnly' | 'readWrite' | 'immutable' | 'writeOnly';
  returned: 'always' | 'never' | 'default' | 'request';
  uniqueness: 'none' | 'server' | 'global';
  subAttributes?: AttributeDefinition[];
  referenceTypes?: string[];
}

function attr(name: string, description: string, rest: Partial<AttributeDefinition> = {}): AttributeDefinition {
  return {
    name,
    type: 'string',
    multiValued: false,
    description,
    required: false,
    caseExact: false,
    mutability: 'readWrite',
    returned: 'default',
    uniqueness: 'none',
    ...rest,
  };
}

/** Common attributes (RFC 7643 §3.1): described in every resource's schema answer, as common practice. */
const COMMON: AttributeDefinition[] = [
  attr('id', 'Identifier of the resource, issued by Sigil (for users: the subject, sub).', {
    caseExact: true,
    mutability: 'readOnly',
    returned: 'always',
    uniqueness: 'server',
  }),
  attr('externalId', 'Identifier of the resource at the provisioning client.', { caseExact: true }),
];

export const USER_ATTRIBUTES: AttributeDefinition[] = [
  attr(
    'userName',
    'Unique identifier the user signs in with; unique case-insensitively among stored and config-file users.',
    { required: true, uniqueness: 'server' },
  ),
  attr('name', "The user's name; kept in the OIDC claims name, given_name, family_name.", {
    type: 'complex',
    subAttributes: [
      attr('formatted', 'The full name (the OIDC claim name).'),
      attr('familyName', 'The family name (the OIDC claim family_name).'),
      attr('givenName', 'The given name (the OIDC claim given_name).'),
    ],
  }),
  attr('displayName', 'The name shown for the user.'),
  attr('active', "Whether the user may sign in; false ends the user's sessions and refresh tokens.", {
    type: 'boolean',
  }),
  attr('password', 'Clear text on write only; stored as an argon2id hash, never returned.', {
    mutability: 'writeOnly',
    returned: 'never',
    caseExact: true,
  }),
  attr('emails', 'Email addresses; the primary one (else the first) is the OIDC claim email.', {
    multiValued: true,
    type: 'complex',
    subAttributes: [
      attr('value', 'The address.'),
      attr('type', "A label: 'work', 'home', 'other'."),
      attr('primary', 'Whether this is the primary address; at most one is.', { type: 'boolean' }),
    ],
  }),
  attr('groups', 'The groups the user is a direct member of; changed through the Group resources.', {
    multiValued: true,
    type: 'complex',
    mutability: 'readOnly',
    subAttributes: [
      attr('value', 'The id of the group.', { mutability: 'readOnly', caseExact: true }),
      attr('$ref', 'The URI of the group.', {
        type: 'reference',
        referenceTypes: ['Group'],
        mutability: 'readOnly',
        caseExact: true,
      }),
      attr('display', 'The displayName of the group.', { mutability: 'readOnly' }),
    ],
  }),
];

export const GROUP_ATTRIBUTES: AttributeDefinition[] = [
  attr('displayName', "The group's name, unique case-insensitively; it appears in the members' role claim.", {
    required: true,
    uniqueness: 'server',
  }),
  attr('members', 'The users in the group.', {
    multiValued: true,
    type: 'complex',
    subAttributes: [
      attr('value', 'The id of the member (a user).', { mutability: 'immutable', caseExact: true }),
      attr('$ref', 'The URI of the member.', {
        type: 'reference',
        referenceTypes: ['User'],
        mutability: 'immutable',
        caseExact: true,
      }),
      attr('display', "The member's userName.", { mutability: 'readOnly' }),
      attr('type', "'User'; groups in groups are not supported.", { mutability: 'immutable' }),
    ],
  }),
];

/** The attribute definition at `attr[.sub]` of a resource's attributes (names case-insensitive, RFC 7643 §2.1). */
export function definitionOf(
  attributes: readonly AttributeDefinition[],
  attr: string,
  sub?: string,
): AttributeDefinition | undefined {
  const find = (list: readonly AttributeDefinition[] | undefined, name: string) =>
    list?.find((a) => a.name.toLowerCase() === name.toLowerCase());
  const top = find([...COMMON, ...attributes], attr);
  return sub === undefined ? top : find(top?.subAttributes, sub);
}

/** The Schemas endpoint's resources (RFC 7644 §4, RFC 7643 §7). */
export function schemas(base: string): Record<string, unknown>[] {
  const schema = (id: string, name: string, description: string, attributes: AttributeDefinition[]) => ({
    schemas: [SCHEMA_SCHEMA],
    id,
    name,
    description,
    attributes: [...COMMON, ...attributes],
    meta: { resourceType: 'Schema', location: `${base}/Schemas/${id}` },
  });
  return [
    schema(USER_SCHEMA, 'User', 'User Account', USER_ATTRIBUTES),
    schema(GROUP_SCHEMA, 'Group', 'Group', GROUP_ATTRIBUTES),
  ];
}

/** The ResourceTypes endpoint's resources (RFC 7643 §6). */
export function resourceTypes(base: string): Record<string, unknown>[] {
  const type = (id: string, endpoint: string, schema: string, description: string) => ({
    schemas: [RESOURCE_TYPE_SCHEMA],
    id,
    name: id,
    endpoint,
    description,
    schema,
    meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/${id}` },
  });
  return [type('User', '/Users', USER_SCHEMA, 'User Account'), type('Group', '/Groups', GROUP_SCHEMA, 'Group')];
}

/**
 * The service provider configuration (RFC 7643 §5): PATCH, sorting and filtering (up to
 * `MAX_COUNT` results) and ETags supported; bulk and password change through a dedicated
 * endpoint not (a password is set as an attribute); OAuth bearer tokens.
 */
export function serviceProviderConfig(base: string, documentationUri: string): Record<string, unknown> {
  return {
    schemas: [SPC_SCHEMA],
    documentationUri,
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: MAX_COUNT },
    changePassword: { supported: false },
    sort: { supported: true },
    etag: { supported: true },
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'OAuth Bearer Token',
        description:
          "An access token of Sigil's with the scope scim (RFC 6750; DPoP-bound tokens with the DPoP scheme, RFC 9449)",
        specUri: 'https://www.rfc-editor.org/rfc/rfc6750',
        primary: true,
      },
    ],
    meta: { resourceType: 'ServiceProviderConfig', location: `${base}/ServiceProviderConfig` },
  };
}
