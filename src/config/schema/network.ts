/** Network settings: whose forwarded addresses to believe, and the listener serving metrics. */
import { isIP } from 'node:net';
import * as z from 'zod';
import { nonEmpty } from './field-kinds.js';

/** Proxy names that proxy-addr (Fastify's `trustProxy`) understands as address ranges. */
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** Whether `s` is an IP address, a CIDR range (`10.0.0.0/8`, `fd00::/8`) or a range name of proxy-addr. */
function isProxyAddress(s: string): boolean {
  if (PROXY_RANGE_NAMES.has(s)) return true;
  const [ip, bits, ...rest] = s.split('/');
  const version = isIP(ip ?? '');
  if (version === 0 || rest.length > 0) return false;
  if (bits === undefined) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (version === 4 ? 32 : 128);
}

/**
 * `trustProxy`: whom to believe about the caller's address (`X-Forwarded-For`). `false` (nobody),
 * the proxies' addresses or CIDR ranges (a string, comma-separated, or an array), or the number of
 * proxy hops in front of Sigil. `true` is refused: it takes the left-most `X-Forwarded-For`
 * entry, which the caller writes, as the address, so callers would escape every per-address limit.
 * Output: `false`, a hop count, or a list of addresses and ranges (as Fastify's `trustProxy` takes).
 */
export const trustProxy = z
  .union([z.boolean(), z.number().int().min(0).max(10), z.string(), z.array(z.string()).min(1)])
  .transform((v, ctx): false | number | string[] => {
    if (v === true) {
      ctx.addIssue({
        code: 'custom',
        message:
          "true is not allowed: the left-most X-Forwarded-For address is written by the caller, so callers could choose their own address and escape every per-address limit; name the proxies' addresses or CIDR ranges, or give the number of proxy hops",
      });
      return z.NEVER;
    }
    if (v === false || typeof v === 'number') return v;
    const list = typeof v === 'string' ? v.split(',').map((p) => p.trim()) : v;
    list.forEach((p, i) => {
      if (!isProxyAddress(p))
        ctx.addIssue({
          code: 'custom',
          ...(Array.isArray(v) ? { path: [i] } : {}),
          message: `"${p.slice(0, 60)}" is not an IP address, a CIDR range (address/bits), or one of loopback, linklocal, uniquelocal`,
        });
    });
    return list;
  });

/** Where the management listener serves `/metrics`; port 0 = any free port. */
export const DEFAULT_METRICS = { host: '127.0.0.1', port: 9464 } as const;

/**
 * `metrics`: the management listener's address and port (loopback by default, never the public
 * listener), or `false` for no metrics at all.
 */
export const metrics = z
  .union([
    z.literal(false),
    z.strictObject({
      host: nonEmpty
        .default(DEFAULT_METRICS.host)
        .meta({ description: "The management listener's address; never one the public can reach" }),
      port: z.number().int().min(0).max(65535).default(DEFAULT_METRICS.port).meta({
        description:
          "The management listener's port; 0 takes any free port (printed at start). --metrics-port and SIGIL_METRICS_PORT override it",
      }),
    }),
  ])
  .default({ ...DEFAULT_METRICS })
  .meta({
    description:
      'The management listener serving /metrics (Prometheus text), never the public listener; false turns metrics off',
  });
