/**
 * A SAML message as a browser request carries it (SAML Bindings §3.4, §3.5): the raw query of a
 * GET (its signature covers the query's original octets), the form of a POST.
 */
import type { FastifyRequest } from 'fastify';
import { browserParams } from '../http/request.js';
import type { Params } from '../protocol/params.js';
import type { BindingMessage, MessageField } from '../saml/binding.js';
import { rawQuery } from '../saml/query.js';
import { XmlRefused } from '../saml/xml.js';

/**
 * The message of a request, by its method.
 * @param field the form field that carries the message in a POST
 * @throws XmlRefused when the query is too long or a parameter or field is repeated; OAuthError for
 *   a form that cannot be read.
 */
export function bindingMessage(request: FastifyRequest, field: MessageField): BindingMessage {
  if (request.method === 'GET') return { binding: 'redirect', raw: rawQuery(request.url) };
  const form: Params = browserParams(request);
  const one = (name: string) => {
    const values = form.getAll(name);
    if (values.length > 1) throw new XmlRefused(`${name} is repeated`);
    return values[0];
  };
  return { binding: 'post', form: { [field]: one(field), RelayState: one('RelayState') } };
}

/**
 * Which message a request carries at the single logout endpoint: a request or a response; undefined
 * for neither or both.
 * @throws OAuthError for a form that cannot be read.
 */
export function messageField(request: FastifyRequest): MessageField | undefined {
  const params = browserParams(request);
  const isRequest = params.getAll('SAMLRequest').length > 0;
  if (isRequest === params.getAll('SAMLResponse').length > 0) return undefined;
  return isRequest ? 'SAMLRequest' : 'SAMLResponse';
}
