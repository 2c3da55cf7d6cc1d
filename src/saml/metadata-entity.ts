/**
 * The entity ID an SP's metadata names (SAML Metadata §2.3.2: the `entityID` of its
 * EntityDescriptor), for an SP registered from its metadata alone. The metadata is untrusted XML
 * (xml.ts: bounded, no DTD); the rest of it is read by `serviceProviderOf`.
 */
import { MAX_ENTITY_ID_LENGTH, MAX_SP_METADATA_LENGTH } from '../config/schema.js';
import { attr, NS, parseUntrusted, XmlRefused } from './xml.js';

/**
 * The `entityID` of the metadata's root EntityDescriptor.
 * @throws XmlRefused when the XML is refused (`parseUntrusted`), its root is not an
 *   EntityDescriptor, or its entityID is missing, empty, longer than `MAX_ENTITY_ID_LENGTH` or
 *   holds control characters.
 */
export function entityIdOfMetadata(xml: string): string {
  const root = parseUntrusted(xml, MAX_SP_METADATA_LENGTH).documentElement;
  if (root.namespaceURI !== NS.metadata || root.localName !== 'EntityDescriptor')
    throw new XmlRefused('metadataXml must be an EntityDescriptor');
  const entityId = attr(root, 'entityID') ?? '';
  if (entityId === '' || entityId.length > MAX_ENTITY_ID_LENGTH || /[\u0000-\u001f\u007f]/.test(entityId))
    throw new XmlRefused(
      `the EntityDescriptor's entityID must be 1 to ${MAX_ENTITY_ID_LENGTH} characters, no control characters`,
    );
  return entityId;
}
