import { describe, expect, it } from 'vitest';
import { Mailer } from '../../src/email/mailer.js';

// Rendering only: nodemailer connects on the first send, which these tests never make.
const mailer = new Mailer(
  {
    transport: 'smtp',
    smtpUrl: 'smtp://127.0.0.1:1',
    from: 'id@acme.example',
    passwordReset: true,
    selfRegistration: false,
    requestsPerAddress: 10,
    mailsPerAccount: 3,
  },
  'Acme <ID>',
);

describe('mail rendering', () => {
  it('escapes every value in the HTML part, keeps the text part plain, and names the product', () => {
    const m = mailer.render({
      to: 'x@example.org',
      kind: 'reset',
      lang: 'en',
      link: 'https://id.example/account/reset?token=a&b="c"',
      values: { username: '<img src=x onerror=alert(1)>' },
    });
    expect(m.subject).toBe('Reset your Acme <ID> password');
    expect(m.html).not.toContain('<img');
    expect(m.html).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(m.html).toContain('href="https://id.example/account/reset?token=a&amp;b=&quot;c&quot;"');
    expect(m.html).toContain('Acme &lt;ID&gt;');
    expect(m.text).toContain('the account <img src=x onerror=alert(1)>.');
    expect(m.text).toContain('https://id.example/account/reset?token=a&b="c"');
  });

  it('translates, and falls back to English for a language it does not have', () => {
    expect(
      mailer.render({ to: 'x@example.org', kind: 'registered', lang: 'de', link: 'https://id.example/account/forgot' })
        .subject,
    ).toBe('Jemand wollte mit Ihrer Adresse ein Konto bei Acme <ID> erstellen');
    const fallback = mailer.render({
      to: 'x@example.org',
      kind: 'verify',
      lang: 'xx',
      link: 'https://id.example/v',
      values: { username: 'u' },
    });
    expect(fallback.subject).toBe('Confirm your email address for Acme <ID>');
    expect(fallback.html).toContain('<html lang="en">');
  });
});
