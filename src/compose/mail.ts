/**
 * Builds the mail group: links by mail (password reset, address verification, self-registration)
 * over SMTP, when the config has `email`; invitations to organizations (sent only with `email`).
 */
import type { UserAdmin } from '../admin/users.js';
import { productName } from '../config/product-name.js';
import { AccountEmail } from '../email/account-email.js';
import { Mailer } from '../email/mailer.js';
import { OrganizationInvitations } from '../email/organization-invitations.js';
import type { Infrastructure, MailServices, Management } from '../services.js';

/** The mail group and its mailer, closed with the server (absent without config `email`). */
export interface BuiltMail {
  mail: MailServices;
  mailer: Mailer | undefined;
}

/**
 * Builds the mail group.
 * @param users the user admin, which writes what the links change (a password, a new account, a
 *   confirmed address) with its rules
 * @param management the management services, which an accepted invitation's membership goes through
 */
export function buildMail(infra: Infrastructure, users: UserAdmin, management: Management): BuiltMail {
  const { config: cfg, store, limiter, log, events } = infra;
  // The `log` transport's lines go to the output beside `sigil start`'s own, for a person to read.
  const mailer = cfg.email
    ? new Mailer(cfg.email, productName(cfg), (line) => process.stdout.write(`${line}\n`))
    : undefined;
  const invitations = new OrganizationInvitations({
    store,
    management,
    events,
    mailer,
    issuer: cfg.issuer,
    log,
    limiter,
  });
  if (!cfg.email || !mailer) return { mail: { invitations }, mailer };
  const email = new AccountEmail({
    store,
    users,
    counters: limiter.counters,
    mailer,
    config: cfg.email,
    issuer: cfg.issuer,
    log,
  });
  return { mail: { email, invitations }, mailer };
}
