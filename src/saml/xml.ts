/**
 * XML as the SAML module reads and writes it, with one parser (@xmldom/xmldom, the same instance
 * xml-crypto verifies signatures with, so that what is verified and what is read come from one
 * XML stack). Reading untrusted XML: bounded in size and depth, any DOCTYPE refused before parsing
 * (no DTD, no entity, internal or external: SAML Core §1.3.5 never needs one, and XXE and entity
 * expansion live there), every parser warning an error, exactly one root element (no second root
 * beside the one read: CVE-2022-39353). Writing: elements and attributes through the DOM only, so
 * no value ever becomes markup.
 */
import { createRequire } from 'node:module';

let xmldom: typeof import('@xmldom/xmldom') | undefined;

/**
 * @xmldom/xmldom, loaded when XML is first read or written: only a config with SAML on does, and a
 * start without it does not pay for the module. The `sigil` command leaves it outside its bundle,
 * as xml-crypto, so that both load the one instance in node_modules.
 */
function dom(): typeof import('@xmldom/xmldom') {
  xmldom ??= createRequire(import.meta.url)('@xmldom/xmldom') as typeof import('@xmldom/xmldom');
  return xmldom;
}

/** Namespaces of SAML 2.0 (SAML Core §1.2, Metadata §2.1) and XML Signature. */
export const NS = {
  protocol: 'urn:oasis:names:tc:SAML:2.0:protocol',
  assertion: 'urn:oasis:names:tc:SAML:2.0:assertion',
  metadata: 'urn:oasis:names:tc:SAML:2.0:metadata',
  dsig: 'http://www.w3.org/2000/09/xmldsig#',
  xsi: 'http://www.w3.org/2001/XMLSchema-instance',
  xs: 'http://www.w3.org/2001/XMLSchema',
} as const;

/** The deepest element nesting read: SAML messages are a handful of levels deep. */
export const MAX_XML_DEPTH = 32;

/** XML refused before or while parsing; the message says why, without echoing the input. */
export class XmlRefused extends Error {}

/**
 * Parses an untrusted XML document.
 * @param maxLength the most characters accepted
 * @returns the document, whose `documentElement` is its only element at the top
 * @throws XmlRefused when it is longer than `maxLength`, has a DOCTYPE (or anything the parser
 *   warns about), is not well-formed, has no or several root elements, or nests deeper than
 *   `MAX_XML_DEPTH`.
 */
export function parseUntrusted(xml: string, maxLength: number): Document {
  if (xml.length > maxLength) throw new XmlRefused('the XML is too large');
  // Before the parser sees it: a DTD is refused as such, whatever the parser would do with it.
  if (/<!DOCTYPE/i.test(xml) || /<!ENTITY/i.test(xml)) throw new XmlRefused('a DTD is not allowed');
  const problems: string[] = [];
  const record = (msg: unknown) => {
    problems.push(String(msg));
  };
  let doc: Document;
  try {
    doc = new (dom().DOMParser)({
      errorHandler: { warning: record, error: record, fatalError: record },
    }).parseFromString(xml, 'text/xml') as unknown as Document;
  } catch {
    throw new XmlRefused('the XML is not well-formed');
  }
  if (problems.length > 0) throw new XmlRefused('the XML is not well-formed');
  // At the top: the root, and only processing instructions (the XML declaration), comments and whitespace besides.
  const tops = [...nodes(doc.childNodes)].filter(
    (n) => n.nodeType !== 7 && n.nodeType !== 8 && !(n.nodeType === 3 && (n.nodeValue ?? '').trim() === ''),
  );
  if (tops.length !== 1 || tops[0]?.nodeType !== 1 || !doc.documentElement)
    throw new XmlRefused('the XML must have exactly one root element');
  if (depthOf(doc.documentElement) > MAX_XML_DEPTH) throw new XmlRefused('the XML nests too deeply');
  return doc;
}

/** The nesting depth of `root`'s element tree (1 for an element without element children), iteratively. */
function depthOf(root: Element): number {
  let max = 0;
  const stack: [Element, number][] = [[root, 1]];
  while (stack.length > 0) {
    const [el, depth] = stack.pop() as [Element, number];
    max = Math.max(max, depth);
    if (depth > MAX_XML_DEPTH) break;
    for (const child of children(el)) stack.push([child, depth + 1]);
  }
  return max;
}

function* nodes(list: NodeListOf<ChildNode> | NodeList): Iterable<Node> {
  for (let i = 0; i < list.length; i++) yield list.item(i) as Node;
}

/** The element children of `el`, in order. */
export function children(el: Element): Element[] {
  return [...nodes(el.childNodes)].filter((n): n is Element => n.nodeType === 1);
}

/** The element children of `el` named `local` in namespace `ns`, in order. */
export function childrenNamed(el: Element, ns: string, local: string): Element[] {
  return children(el).filter((c) => c.namespaceURI === ns && c.localName === local);
}

/**
 * The one child of `el` named `local` in `ns`, undefined when there is none.
 * @throws XmlRefused when there are several (a second one would be read by someone else).
 */
export function onlyChild(el: Element, ns: string, local: string): Element | undefined {
  const found = childrenNamed(el, ns, local);
  if (found.length > 1) throw new XmlRefused(`more than one ${local}`);
  return found[0];
}

/** An element's text content, trimmed (SAML values such as an Issuer are whitespace-trimmed strings). */
export function textOf(el: Element | undefined): string | undefined {
  return el?.textContent?.trim();
}

/** An attribute's value, undefined when absent. */
export function attr(el: Element, name: string): string | undefined {
  return el.hasAttribute(name) ? (el.getAttribute(name) ?? undefined) : undefined;
}

/** A new XML document whose root is `qualifiedName` in `ns`, to build a message on. */
export function newDocument(ns: string, qualifiedName: string): Document {
  return new (dom().DOMImplementation)().createDocument(ns, qualifiedName, null) as unknown as Document;
}

/**
 * Adds an element `qualifiedName` in `ns` under `parent`, with attributes and, when given, text.
 * @returns the new element
 */
export function addElement(
  parent: Element,
  ns: string,
  qualifiedName: string,
  attributes: Record<string, string | undefined> = {},
  text?: string,
): Element {
  const doc = parent.ownerDocument as Document;
  const el = doc.createElementNS(ns, qualifiedName);
  for (const [name, value] of Object.entries(attributes)) if (value !== undefined) el.setAttribute(name, value);
  if (text !== undefined) el.appendChild(doc.createTextNode(text));
  parent.appendChild(el);
  return el;
}

/** Serializes a node; refuses what would not be well-formed XML (xmldom's `requireWellFormed`). */
export function serialize(node: Node): string {
  return new (dom().XMLSerializer)().serializeToString(node as never, false, undefined, { requireWellFormed: true });
}
