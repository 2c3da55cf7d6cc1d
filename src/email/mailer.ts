/**
 * Mail through SMTP (config `email`), with nodemailer: every message is text plus HTML,
 * in the reader's language (the catalogues of `page-kit/i18n.ts`), named after the product
 * (`config/product-name.ts`). The HTML is rendered by Eta with auto-escaping, as the pages are:
 * addresses, usernames and links never reach the markup unescaped. TLS follows the URL: `smtps://`
 * from the first byte, `smtp://` upgraded with STARTTLS when the server offers it (nodemailer).
 */
import { createRequire } from 'node:module';
import { Eta } from 'eta';
import type { Transporter } from 'nodemailer';
import type { Config } from '../config/schema.js';
import { CATALOGUES, format, type Messages } from '../page-kit/i18n.js';

/** The messages Sigil sends, each a subject, a paragraph, a link and the "ignore this" line. */
export type MailKind = 'reset' | 'verify' | 'register' | 'registered' | 'invitation' | 'ciba';

const TEXTS: Record<MailKind, { subject: keyof Messages; body: keyof Messages }> = {
  reset: { subject: 'mailResetSubject', body: 'mailResetBody' },
  verify: { subject: 'mailVerifySubject', body: 'mailVerifyBody' },
  register: { subject: 'mailRegisterSubject', body: 'mailRegisterBody' },
  registered: { subject: 'mailRegisteredSubject', body: 'mailRegisteredBody' },
  invitation: { subject: 'mailInvitationSubject', body: 'mailInvitationBody' },
  ciba: { subject: 'mailCibaSubject', body: 'mailCibaBody' },
};

const HTML = `<!doctype html>
<html lang="<%= it.lang %>"><head><meta charset="utf-8"><title><%= it.subject %></title></head>
<body style="font-family: system-ui, sans-serif; line-height: 1.5">
<p style="font-weight: bold"><%= it.product %></p>
<p><%= it.body %></p>
<p><a href="<%= it.link %>"><%= it.link %></a></p>
<p style="color: #555"><%= it.ignore %></p>
</body></html>`;

const TEXT = `<%~ it.product %>

<%~ it.body %>

<%~ it.link %>

<%~ it.ignore %>
`;

/** One message to send. */
export interface Mail {
  to: string;
  kind: MailKind;
  /** A supported language (`pickLocale`); English otherwise. */
  lang: string;
  /** The absolute URL the message asks the reader to follow. */
  link: string;
  /** Values of the texts' placeholders besides `{product}`, e.g. `username`. */
  values?: Record<string, string>;
}

/**
 * Where the `log` transport writes a message instead of sending it: one line naming the address,
 * the subject and the link (the link is all a reader needs; the text around it is the catalogue's).
 */
export type MailPrinter = (line: string) => void;

/** Renders and sends the messages of one Sigil instance. */
export class Mailer {
  /** The SMTP transport; none with the `log` transport. */
  private readonly transport: Transporter | undefined;
  private readonly html = new Eta({ autoEscape: true, cache: true });
  private readonly text = new Eta({ autoEscape: false, cache: true });

  /**
   * @param productName the name the messages carry (`productName(config)`)
   * @param print where the `log` transport writes each message
   */
  constructor(
    private readonly config: NonNullable<Config['email']>,
    private readonly productName: string,
    private readonly print: MailPrinter = () => {},
  ) {
    this.html.loadTemplate('@mail', HTML);
    this.text.loadTemplate('@mail', TEXT);
    if (config.transport === 'log') return;
    // Loaded here, not at start: a config without `email` never pays for the module in start time.
    const { createTransport } = createRequire(import.meta.url)('nodemailer') as typeof import('nodemailer');
    // Bounded waits: a server that hangs must not hold background sends (and their sockets) for
    // nodemailer's default of minutes. The URL's own settings win over these.
    this.transport = createTransport({
      url: config.smtpUrl,
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 30_000,
    });
  }

  /** The subject, text and HTML of `mail`, as sent. */
  render(mail: Mail): { subject: string; text: string; html: string } {
    const t: Messages = CATALOGUES[mail.lang] ?? (CATALOGUES.en as Messages);
    const lang = CATALOGUES[mail.lang] ? mail.lang : 'en';
    const values = { ...mail.values, product: this.productName };
    const data = {
      lang,
      product: this.productName,
      subject: format(t[TEXTS[mail.kind].subject], values),
      body: format(t[TEXTS[mail.kind].body], values),
      link: mail.link,
      ignore: t.mailIgnore,
    };
    return { subject: data.subject, text: this.text.render('@mail', data), html: this.html.render('@mail', data) };
  }

  /**
   * Sends `mail` through the configured SMTP server, or with the `log` transport writes its line.
   * @throws Error from nodemailer when the server cannot be reached or refuses the message.
   */
  async send(mail: Mail): Promise<void> {
    const { subject, text, html } = this.render(mail);
    if (!this.transport) {
      // JSON strings: an address or subject cannot break the line or forge another one.
      this.print(`sigil: mail to ${JSON.stringify(mail.to)}, ${JSON.stringify(subject)}: ${mail.link}`);
      return;
    }
    await this.transport.sendMail({ from: this.config.from, to: mail.to, subject, text, html });
  }

  /** Closes the SMTP connections. */
  close(): void {
    this.transport?.close();
  }
}
