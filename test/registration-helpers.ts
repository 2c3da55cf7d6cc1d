/** Fixtures of the dynamic registration tests (RFC 7591/7592). */
import { testConfig } from './helpers.js';

/**
 * The test config with registration on (`registration` overrides its settings) and the client
 * `registrar` (secret `registrar-secret`), which may get the built-in scope sigil:register by
 * client_credentials: an initial access token.
 */
export function registrationConfig(registration: Record<string, unknown> = {}) {
  const base = testConfig();
  return {
    clients: [
      ...(base.clients ?? []),
      {
        clientId: 'registrar',
        clientSecrets: ['registrar-secret'],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['sigil:register'],
      },
    ],
    registration: { enabled: true, ...registration },
  };
}
