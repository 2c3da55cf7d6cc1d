/**
 * Device authorization, `POST /connect/deviceauthorization` (RFC 8628 §3.1–§3.2): the device's
 * client authenticates like at the token endpoint and receives a device code (256-bit, stored
 * hashed), a user code to type at `{issuer}/device`, and the polling interval. Each authorization
 * stores two rows, so it counts against the caller's address and the client (`pendingLimits`);
 * beyond either limit the answer is 429 `temporarily_unavailable` with `Retry-After` (RFC 6585
 * §4) and nothing is stored.
 */
import type { FastifyInstance } from 'fastify';
import type { Services } from '../services.js';
import { DEVICE_CODE_GRANT } from '../grants/device-code.js';
import { OAuthError } from '../protocol/errors.js';
import { credentialSource, formBody, noStore, sendOAuthError } from '../http/request.js';
import { newHandle, nowSeconds } from '../crypto/handles.js';
import { authenticateClient } from '../clients/authentication.js';
import { addressQuotaKey, chargeQuota } from '../limits/request-quota.js';
import { validateScopes } from '../resources/scopes.js';
import { formatUserCode, generateUserCode } from '../validation/user-code.js';
import { userCodeKey, type DeviceCodeData } from '../stores/records/device-codes.js';
import type { ClientAuthServices } from '../clients/authentication.js';

/** The device authorization endpoint (RFC 8628 §3.1). */
export const DEVICE_AUTHORIZATION_PATH = '/connect/deviceauthorization';

/** The services this module uses. */
export type DeviceAuthorizationEndpointServices = Pick<
  Services,
  'config' | 'issuer' | 'limiter' | 'resources' | 'store'
> &
  ClientAuthServices;

/** Registers `/connect/deviceauthorization` (anything but a form POST: 400 invalid_request). */
export function deviceAuthorizationEndpoint(app: FastifyInstance, ctx: DeviceAuthorizationEndpointServices): void {
  app.route({
    method: ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'],
    url: DEVICE_AUTHORIZATION_PATH,
    handler: async (request, reply) => {
      try {
        const params = formBody(request, 'invalid_request');
        const { client } = await authenticateClient(
          credentialSource(request, params),
          ctx,
          request.ip,
          DEVICE_AUTHORIZATION_PATH,
        );
        if (!client.allowedGrantTypes.includes(DEVICE_CODE_GRANT))
          throw new OAuthError('unauthorized_client', 'the client may not use the device flow');
        const scopes = validateScopes(params.get('scope'), client, ctx.resources, 'user');
        const limits = ctx.config.pendingLimits;
        await chargeQuota(
          ctx.limiter,
          'device_quota',
          [
            { key: `device:address:${addressQuotaKey(request.ip)}`, limit: limits.deviceAuthorizationsPerAddress },
            { key: `device:client:${client.clientId}`, limit: limits.deviceAuthorizationsPerClient },
          ],
          limits.windowSeconds,
        );
        const now = nowSeconds();
        const expiresAt = now + client.deviceCodeLifetime;
        const deviceCode = newHandle();
        const deviceKey = ctx.store.records.deviceCodes.keyOf(deviceCode);
        const userCode = await storeUserCode(ctx, client.clientId, deviceKey, now, expiresAt);
        const data: DeviceCodeData = {
          scopes,
          userCodeKey: userCodeKey(userCode),
          status: 'pending',
          interval: client.pollingInterval,
        };
        await ctx.store.records.deviceCodes.put(deviceCode, {
          clientId: client.clientId,
          data,
          createdAt: now,
          expiresAt,
        });
        const shown = formatUserCode(userCode);
        return noStore(reply)
          .type('application/json; charset=utf-8')
          .send({
            device_code: deviceCode,
            user_code: shown,
            verification_uri: `${ctx.issuer}/device`,
            verification_uri_complete: `${ctx.issuer}/device?userCode=${shown}`,
            expires_in: client.deviceCodeLifetime,
            interval: client.pollingInterval,
          });
      } catch (err) {
        if (!(err instanceof OAuthError)) throw err;
        return sendOAuthError(reply, err);
      }
    },
  });
}

/** Stores a fresh user code that no live device code uses; returns it in canonical form. */
async function storeUserCode(
  ctx: DeviceAuthorizationEndpointServices,
  clientId: string,
  deviceKey: string,
  now: number,
  expiresAt: number,
): Promise<string> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const code = generateUserCode();
    const existing = await ctx.store.records.deviceCodes.findUserCode(code);
    if (existing && existing.expiresAt > now && existing.revokedAt === null) continue;
    await ctx.store.records.deviceCodes.saveUserCode(code, { clientId, deviceKey, createdAt: now, expiresAt });
    return code;
  }
  throw new OAuthError('temporarily_unavailable', 'could not allocate a user code, retry', 503);
}
