/**
 * A real SMTP server on a loopback port (the `smtp-server` package) that keeps every message it
 * receives, and a minimal reader of what nodemailer sends: headers, and the text/plain and
 * text/html parts of a multipart/alternative body (7bit, quoted-printable or base64).
 */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/** One message as received. */
export interface ReceivedMail {
  /** RCPT TO addresses. */
  to: string[];
  from: string;
  subject: string;
  text: string;
  html: string;
  raw: string;
}

/** The SMTP server of a test. */
export class SmtpReceiver {
  readonly mails: ReceivedMail[] = [];
  private server!: SMTPServer;
  port = 0;

  async start(): Promise<this> {
    this.server = new SMTPServer({
      authOptional: true,
      // Plain SMTP on loopback: no STARTTLS offered (the package's own certificate is self-signed).
      disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false,
      onData: (stream, session, done) => {
        let raw = '';
        stream.setEncoding('utf8');
        stream.on('data', (chunk: string) => (raw += chunk));
        stream.on('end', () => {
          this.mails.push({ ...parse(raw), to: session.envelope.rcptTo.map((r) => r.address), raw });
          done();
        });
      },
    });
    await new Promise<void>((ok) => this.server.listen(0, '127.0.0.1', ok));
    this.port = (this.server.server.address() as AddressInfo).port;
    return this;
  }

  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  /** Waits (up to `timeoutMs`) until `count` messages have arrived in all; returns the last. */
  async waitFor(count: number, timeoutMs = 10_000): Promise<ReceivedMail> {
    const until = Date.now() + timeoutMs;
    while (this.mails.length < count) {
      if (Date.now() > until) throw new Error(`expected ${count} mails, got ${this.mails.length}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return this.mails[count - 1] as ReceivedMail;
  }

  close(): Promise<void> {
    return new Promise((ok) => this.server.close(() => ok()));
  }
}

/** The first link to `path` in a message's text. */
export function linkIn(mail: ReceivedMail, path: string): string {
  const found = mail.text.match(
    new RegExp(`https?://\\S+${path.replace(/\//g, '\\/')}\\?token=[A-Za-z0-9_%-]+(&interaction=[A-Za-z0-9_-]+)?`),
  );
  if (!found) throw new Error(`no ${path} link in:\n${mail.text}`);
  return found[0];
}

function parse(raw: string): Omit<ReceivedMail, 'to' | 'raw'> {
  const [head = '', ...rest] = raw.split(/\r?\n\r?\n/);
  const headers = headerMap(head);
  const body = rest.join('\r\n\r\n');
  const boundary = /boundary="?([^";]+)"?/i.exec(headers.get('content-type') ?? '')?.[1];
  const parts = boundary ? body.split(`--${boundary}`).slice(1, -1) : [`${head}\r\n\r\n${body}`];
  let text = '';
  let html = '';
  for (const part of parts) {
    const [partHead = '', ...partBody] = part.replace(/^\r?\n/, '').split(/\r?\n\r?\n/);
    const h = headerMap(partHead);
    const content = decode(partBody.join('\r\n\r\n'), h.get('content-transfer-encoding') ?? '7bit');
    if ((h.get('content-type') ?? '').startsWith('text/plain')) text = content;
    if ((h.get('content-type') ?? '').startsWith('text/html')) html = content;
  }
  return { from: headers.get('from') ?? '', subject: encodedWords(headers.get('subject') ?? ''), text, html };
}

function headerMap(head: string): Map<string, string> {
  const unfolded = head.replace(/\r?\n[ \t]+/g, ' ');
  return new Map(
    unfolded.split(/\r?\n/).map((line) => {
      const i = line.indexOf(':');
      return [line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim()] as [string, string];
    }),
  );
}

/** RFC 2047 encoded words (`=?UTF-8?Q?...?=`, `=?UTF-8?B?...?=`); whitespace between two is dropped. */
function encodedWords(value: string): string {
  return value
    .replace(/\?=\s+=\?/g, '?==?')
    .replace(/=\?UTF-8\?([QB])\?([^?]*)\?=/gi, (_m, kind: string, data: string) =>
      kind.toUpperCase() === 'B' ? decode(data, 'base64') : decode(data.replace(/_/g, ' '), 'quoted-printable'),
    );
}

function decode(body: string, encoding: string): string {
  if (/base64/i.test(encoding)) return Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
  if (/quoted-printable/i.test(encoding)) {
    // Literal percent signs first, then each =XX octet as %XX: decodeURIComponent joins UTF-8 sequences.
    const escaped = body
      .replace(/=\r?\n/g, '')
      .replace(/%/g, '%25')
      .replace(/=([0-9A-F]{2})/gi, (_m, hex: string) => `%${hex}`);
    return decodeURIComponent(escaped);
  }
  return body;
}
