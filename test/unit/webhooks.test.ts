/**
 * The pure parts of webhooks: the back-off schedule (doubling with equal jitter, capped, at least
 * 1 s; the default schedule tries about thirty times in 24 hours), the config's webhooks (secret
 * format, unique names, `*` alone), the registry's routing (disabled and unsubscribed webhooks get
 * nothing), and the events the audit events stand for (a failed sign-in never names the username
 * typed).
 */
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/config/loader.js';
import { WEBHOOK_DELIVERY_DEFAULTS } from '../../src/config/schema/webhooks.js';
import type { SigilEvent } from '../../src/events/events.js';
import { webhookEventsOf } from '../../src/webhooks/audit-events.js';
import { retryDelaySeconds } from '../../src/webhooks/delivery.js';
import { WebhookRegistry } from '../../src/webhooks/registry.js';
import { newWebhookSecret } from '../../src/webhooks/signing.js';
import { testConfig } from '../helpers.js';

const SECRET = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;

describe('the back-off schedule', () => {
  it('doubles from the first wait up to the longest, each between its half and its whole', () => {
    expect(retryDelaySeconds(1, 5, 3600, 0)).toBe(3);
    expect(retryDelaySeconds(1, 5, 3600, 0.999)).toBe(5);
    expect(retryDelaySeconds(4, 5, 3600, 0.999)).toBe(40);
    expect(retryDelaySeconds(30, 5, 3600, 0)).toBe(1800);
    expect(retryDelaySeconds(30, 5, 3600, 0.999)).toBeLessThanOrEqual(3600);
    expect(retryDelaySeconds(30, 5, 3600, 0.999)).toBeGreaterThan(3590);
    expect(retryDelaySeconds(1, 1, 2, 0)).toBe(1);
  });

  it('tries a failing delivery between 24 and 60 times in the default 24 hours', () => {
    const { firstRetrySeconds, maxRetrySeconds, retrySeconds } = WEBHOOK_DELIVERY_DEFAULTS;
    for (const random of [0, 0.5, 0.999]) {
      let elapsed = 0;
      let attempts = 1;
      while (elapsed + retryDelaySeconds(attempts, firstRetrySeconds, maxRetrySeconds, random) <= retrySeconds) {
        elapsed += retryDelaySeconds(attempts, firstRetrySeconds, maxRetrySeconds, random);
        attempts++;
      }
      expect(attempts).toBeGreaterThanOrEqual(24);
      expect(attempts).toBeLessThanOrEqual(60);
    }
  });
});

describe('webhooks in the config file', () => {
  const hook = (extra: Record<string, unknown> = {}) => ({
    name: 'crm',
    url: 'https://crm.example/hooks',
    events: ['user.created'],
    secret: SECRET,
    ...extra,
  });
  const problems = (webhooks: unknown[]) => {
    try {
      resolveConfig(testConfig({ webhooks: webhooks as never }));
      return '';
    } catch (err) {
      return (err as Error).message;
    }
  };

  it('take a Standard Webhooks secret of 24 to 64 bytes, and Sigil generates 32', () => {
    expect(problems([hook()])).toBe('');
    expect(problems([hook({ secret: 'not-a-secret' })])).toContain('webhooks[0].secret');
    expect(problems([hook({ secret: `whsec_${Buffer.alloc(16).toString('base64')}` })])).toContain('secret');
    expect(problems([hook({ secret: newWebhookSecret() })])).toBe('');
  });

  it('refuse a name twice, "*" beside other events, an unknown event, and plain http off loopback', () => {
    expect(problems([hook(), hook({ url: 'https://other.example/' })])).toContain('duplicate webhook name "crm"');
    expect(problems([hook({ events: ['*', 'user.created'] })])).toContain('"*" stands alone');
    expect(problems([hook({ events: ['user.exploded'] })])).toContain('webhooks[0].events[0]');
    expect(problems([hook({ url: 'http://crm.example/hooks' })])).toContain('webhooks[0].url');
    expect(problems([hook({ url: 'http://127.0.0.1:9000/hooks' })])).toBe('');
  });
});

describe('the registry', () => {
  it('routes an event to the enabled webhooks subscribed to it', () => {
    const registry = new WebhookRegistry([
      { name: 'all', url: 'https://a.example/', events: ['*'], secret: SECRET },
      { name: 'users', url: 'https://u.example/', events: ['user.created'], secret: SECRET },
    ]);
    expect(registry.subscribers('user.created')).toEqual(['all', 'users']);
    expect(registry.subscribers('client.created')).toEqual(['all']);
    registry.setDisabled(new Map([['all', { disabledAt: 1, reason: 'the receiver answered 410 Gone' }]]));
    expect(registry.subscribers('user.created')).toEqual(['users']);
    expect(registry.enabled()).toEqual(['users']);
  });
});

describe('the webhook events of audit events', () => {
  const event = (e: Partial<SigilEvent>): SigilEvent => ({ name: 'token_issued', time: '', endpoint: 'x', ...e });

  it('tell sign-ins, enrolments and consents, and nothing of other events', () => {
    expect(webhookEventsOf(event({ name: 'user_login_succeeded', subjectId: 's', method: 'password' }))).toEqual([
      { type: 'user.signed_in', orderKey: 'user:s', data: { subject: 's', method: 'password' } },
    ]);
    expect(webhookEventsOf(event({ name: 'webauthn_registered', subjectId: 's', factor: 'passkey' }))[0]).toMatchObject(
      {
        type: 'user.mfa_enrolled',
        data: { factor: 'passkey' },
      },
    );
    expect(webhookEventsOf(event({ name: 'token_issued', subjectId: 's' }))).toEqual([]);
    expect(webhookEventsOf(event({ name: 'session_ended', subjectId: 's' }))).toEqual([]);
  });

  it('never put the username a failed sign-in typed, nor anything but the fields named', () => {
    const [failed] = webhookEventsOf(
      event({
        name: 'user_login_failed',
        method: 'password',
        clientId: 'web',
        userAgent: 'hunter2-agent',
        remoteAddress: '192.0.2.1',
        errorDescription: 'unknown user',
      }),
    );
    expect(failed?.data).toEqual({ method: 'password', clientId: 'web', reason: 'unknown user' });
    expect(failed?.orderKey).toMatch(/^anonymous:/);
  });
});
