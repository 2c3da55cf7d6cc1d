/**
 * Builds the mail group: links by mail (password reset, address verification, self-registration)
 * over SMTP, when the config has `email`.
 */
import type { UserAdmin } from '../admin/users.js';
import { productName } from '../config/product-name.js';
import { AccountEmail } from '../email/account-email.js';
import { Mailer } from '../email/mailer.js';
import type { Infrastructure, MailServices } from '../services.js';

/** The mail group and its mailer, closed with the server (absent without config `email`). */
export interface BuiltMail {
  mail: MailServices;
  mailer: Mailer | undefined;
}

/**
 * Builds the mail group.
 * @param users the user admin, which writes what the links change (a password, a new account, a
 *   confirmed address) with its rules
 */
export function buildMail(infra: Infrastructure, users: UserAdmin): BuiltMail {
  const { config: cfg, store, limiter, log } = infra;
  if (!cfg.email) return { mail: {}, mailer: undefined };
  const mailer = new Mailer(cfg.email, productName(cfg));
  const email = new AccountEmail({
    store,
    users,
    counters: limiter.counters,
    mailer,
    config: cfg.email,
    issuer: cfg.issuer,
    log,
  });
  return { mail: { email }, mailer };
}
