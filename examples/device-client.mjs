#!/usr/bin/env node
// A command-line device client (RFC 8628) for the demo server: it asks Sigil for a device code,
// prints the code and the URL to open, and waits until someone approves it in a browser.
//
//   npm start                       (in one terminal)
//   node examples/device-client.mjs (in another)
//
// Environment: SIGIL_ISSUER (default http://localhost:5000), CLIENT_ID (default demo-device),
// SCOPE (default "openid profile offline_access api1").
import * as client from 'openid-client';

const issuer = new URL(process.env.SIGIL_ISSUER ?? 'http://localhost:5000');
const clientId = process.env.CLIENT_ID ?? 'demo-device';
const scope = process.env.SCOPE ?? 'openid profile offline_access api1';

// openid-client refuses plain http unless told otherwise: acceptable only for a localhost demo.
const options = issuer.protocol === 'http:' ? { execute: [client.allowInsecureRequests] } : undefined;
const config = await client.discovery(issuer, clientId, undefined, client.None(), options);

const device = await client.initiateDeviceAuthorization(config, { scope });
console.log(`To sign in, open ${device.verification_uri} and enter the code ${device.user_code}`);
console.log(`(or open ${device.verification_uri_complete})`);
console.log(`Waiting for approval; the code expires in ${device.expires_in} s ...`);

try {
  const tokens = await client.pollDeviceAuthorizationGrant(config, device);
  console.log('Approved. Token response:');
  console.log(JSON.stringify({ ...tokens }, null, 2));
  const claims = tokens.claims();
  if (claims) console.log(`Signed in as subject ${claims.sub}`);
} catch (err) {
  console.error(`No tokens: ${err.error ?? err.message}${err.error_description ? ` (${err.error_description})` : ''}`);
  process.exitCode = 1;
}
