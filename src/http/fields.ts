/**
 * Single values of browser input: a form field (`Params`) or a query parameter. Pages treat an
 * absent and a repeated field alike, as missing.
 */
import type { FastifyRequest } from 'fastify';
import type { Params } from '../protocol/params.js';

/** One value of a form field, or undefined (absent or repeated). */
export function single(params: Params, name: string): string | undefined {
  try {
    return params.get(name);
  } catch {
    return undefined;
  }
}

/** One string value of a query parameter, or undefined (absent or repeated). */
export function queryString(request: FastifyRequest, name: string): string | undefined {
  const v = (request.query as Record<string, unknown> | undefined)?.[name];
  return typeof v === 'string' ? v : undefined;
}
