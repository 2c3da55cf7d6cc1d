/**
 * A minimal cookie-keeping browser over `app.inject`, for flows through the login and consent
 * pages without a real browser (the Chromium suite covers the real one).
 */
import type { FastifyInstance } from 'fastify';

/** Response of one step. */
export interface Step {
  status: number;
  location?: string;
  body: string;
  headers: Record<string, unknown>;
}

/** A cookie jar plus helpers to read forms. */
export class InjectBrowser {
  readonly cookies = new Map<string, string>();

  constructor(private readonly app: FastifyInstance) {}

  /** GET a path (or absolute URL on the issuer). */
  async get(url: string): Promise<Step> {
    return this.send('GET', url);
  }

  /** POST a form. */
  async post(url: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Step> {
    return this.send('POST', url, new URLSearchParams(fields).toString(), headers);
  }

  private async send(method: 'GET' | 'POST', url: string, payload?: string, extra: Record<string, string> = {}): Promise<Step> {
    const path = url.startsWith('http') ? new URL(url).pathname + new URL(url).search : url;
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await this.app.inject({
      method,
      url: path,
      headers: {
        ...(cookie ? { cookie } : {}),
        ...(payload !== undefined ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        ...extra,
      },
      ...(payload !== undefined ? { payload } : {}),
    });
    for (const c of res.cookies) {
      if (c.value === '' || (c.maxAge !== undefined && c.maxAge <= 0) || (c.expires && c.expires.getTime() < Date.now())) this.cookies.delete(c.name);
      else this.cookies.set(c.name, c.value);
    }
    const location = res.headers.location;
    return { status: res.statusCode, body: res.body, headers: res.headers, ...(typeof location === 'string' ? { location } : {}) };
  }

  /** The value of a hidden input in an HTML page. */
  static input(html: string, name: string): string {
    const m = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
    if (!m) throw new Error(`no input ${name} in page`);
    return m[1] ?? '';
  }

  /**
   * Signs in on the login page the authorize request redirected to, and follows the redirects
   * until the response leaves the server (a redirect to another origin, or a non-redirect).
   */
  async login(loginLocation: string, username: string, password: string): Promise<Step> {
    const page = await this.get(loginLocation);
    const fields: Record<string, string> = {
      csrf_token: InjectBrowser.input(page.body, 'csrf_token'),
      username,
      password,
      button: 'login',
    };
    const interaction = /name="interaction" value="([^"]*)"/.exec(page.body)?.[1];
    if (interaction) fields.interaction = interaction;
    return this.follow(await this.post('/account/login', fields));
  }

  /** Follows same-server redirects. */
  async follow(step: Step): Promise<Step> {
    let current = step;
    for (let i = 0; i < 10 && current.status === 303 && current.location?.startsWith('/'); i++) {
      current = await this.get(current.location);
    }
    return current;
  }
}
