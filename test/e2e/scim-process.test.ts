/**
 * SCIM end to end: a real `sigil start` process over the network, a provisioning
 * client with client_credentials and the `scim` scope, and a relying party's view of the result.
 * A group's displayName shows in the member's `role` claim at userinfo; `active: false` makes the
 * member's refresh token fail and their sign-in get the wrong password's answer.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServerProcess, startProcess, testConfig } from '../helpers.js';
import { freePort } from './ports.js';

const base = testConfig();
let server: ServerProcess;
beforeAll(async () => {
  const config = testConfig({
    clients: [
      ...base.clients!,
      {
        clientId: 'provisioner',
        clientSecrets: ['provisioner-secret'],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['scim'],
      },
    ],
  });
  server = await startProcess(config, await freePort());
});
afterAll(async () => {
  await server?.stop();
});

async function token(client: string, secret: string, fields: Record<string, string>): Promise<Record<string, string>> {
  const res = await fetch(`${server.url}/connect/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${client}:${secret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams(fields),
  });
  return { status: String(res.status), ...((await res.json()) as Record<string, string>) };
}

describe('SCIM against a running server', () => {
  it('provisions a user into a group (role at userinfo), then deactivates them (refresh token refused)', async () => {
    const { access_token: admin } = await token('provisioner', 'provisioner-secret', {
      grant_type: 'client_credentials',
      scope: 'scim',
    });
    const scim = (method: string, path: string, body: unknown) =>
      fetch(`${server.url}/scim/v2${path}`, {
        method,
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/scim+json' },
        body: JSON.stringify(body),
      });
    const created = await scim('POST', '/Users', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      userName: 'frank',
      password: 'harbour-violet-1959',
      name: { givenName: 'Frank' },
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    const group = await scim('POST', '/Groups', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
      displayName: 'engineering',
      members: [{ value: id }],
    });
    expect(group.status).toBe(201);

    const tokens = await token('ropc', 'ropc-secret', {
      grant_type: 'password',
      username: 'frank',
      password: 'harbour-violet-1959',
      scope: 'openid profile roles offline_access',
    });
    expect(tokens.status).toBe('200');
    const info = await fetch(`${server.url}/connect/userinfo`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(await info.json()).toEqual({ sub: id, given_name: 'Frank', role: ['engineering'] });

    const patched = await scim('PATCH', `/Users/${id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'replace', value: { active: false } }],
    });
    expect(patched.status).toBe(200);
    const refreshed = await token('ropc', 'ropc-secret', {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token ?? '',
    });
    expect(refreshed).toMatchObject({ status: '400', error: 'invalid_grant' });
    const again = await token('ropc', 'ropc-secret', {
      grant_type: 'password',
      username: 'frank',
      password: 'harbour-violet-1959',
    });
    const wrong = await token('ropc', 'ropc-secret', {
      grant_type: 'password',
      username: 'frank',
      password: 'not-the-password',
    });
    expect(again).toEqual(wrong);
  });
});
