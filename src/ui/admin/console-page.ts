/**
 * What the console's page modules share: the `Console` they are given (rendering, the session
 * and CSRF guards, the audit helper) and how a refused change reads. Its `reader` and `writer`
 * let full admins in only, so a page is closed to organization admins unless its module asks
 * `sessionReader`/`sessionWriter` and checks the organization itself.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuditedChanges, AuditedWebhookChanges } from '../../admin/audited-changes.js';
import { AdminError, type ItemKind, type ItemRef, type RefusalReason } from '../../admin/errors.js';
import type { AdminAudit } from '../../admin/user-types.js';
import type { Services } from '../../services.js';
import type { Params } from '../../protocol/params.js';
import { ScimError } from '../../protocol/scim-filter.js';
import { format, type Messages } from '../../page-kit/i18n.js';
import { DirectoryUnavailable } from '../../users/directory.js';
import type { ConsoleCaller, ConsoleRole } from './console-session.js';

/** The services this module uses. */
export type ConsolePageServices = Pick<
  Services,
  'basePath' | 'clients' | 'config' | 'email' | 'events' | 'invitations' | 'management' | 'upstream' | 'users'
>;

/**
 * The confirmations a change's redirect may name (`?done=<key>`, Post/Redirect/Get): message keys
 * of fixed texts, so the page shows one of these or nothing, never text from the request.
 */
export const NOTICES = [
  'consoleUserCreated',
  'consoleUserEnabled',
  'consoleUserDisabled',
  'consoleClaimsSaved',
  'consoleTemporaryPasswordSet',
  'consoleGroupsSaved',
  'consoleMfaReset',
  'consoleSessionRevoked',
  'consoleResetMailSent',
  'consoleVerifyMailSent',
  'consoleMailNotSent',
  'consoleGroupCreated',
  'consoleGroupDeleted',
  'consoleClientCreated',
  'consoleClientSaved',
  'consoleClientDeleted',
  'consoleResourceCreated',
  'consoleResourceSaved',
  'consoleResourceDeleted',
  'consoleKeysRotated',
  'consoleKeyRetired',
  'consoleOrganizationCreated',
  'consoleOrganizationSaved',
  'consoleOrganizationDeleted',
  'consoleMemberAdded',
  'consoleMemberRolesMerged',
  'consoleMemberRolesSaved',
  'consoleMemberRemoved',
  'consoleInvitationSent',
  'consoleInvitationRevoked',
  'consoleWebhookPinged',
  'consoleDeliveryRetried',
  'consoleWebhookEnabled',
  'consoleWebhookDisabled',
  'consoleWebhookDeleted',
  'consoleSamlCreated',
  'consoleSamlSaved',
  'consoleSamlDeleted',
] as const satisfies readonly (keyof Messages)[];

/** A Unix time (seconds) as the console shows it: UTC, to the second ("2026-11-29 14:03:07 UTC"); '' for none. */
export function shownTime(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds)) return '';
  return new Date(Math.floor(seconds) * 1000)
    .toISOString()
    .replace('T', ' ')
    .replace(/(\.\d+)?Z$/, ' UTC');
}

/** A confirmation a change's redirect names. */
export type Notice = (typeof NOTICES)[number];

/** The notice a `done` query value names, if it is one of `NOTICES`. */
export function noticeOf(value: string | undefined): Notice | undefined {
  return NOTICES.find((key) => key === value);
}

/**
 * The console's sections, as the navigation names them: the full console's, and `my-organizations`,
 * the one section of an organization admin's console.
 */
export type Section =
  | 'users'
  | 'organizations'
  | 'clients'
  | 'resources'
  | 'keys'
  | 'webhooks'
  | 'saml-service-providers'
  | 'events'
  | 'my-organizations';

/** A console session's user and the console they get. */
export interface SignedIn {
  caller: ConsoleCaller;
  role: ConsoleRole;
}

/** What each console page module gets: rendering, the guards, and the audit helper. */
export interface Console {
  ctx: ConsolePageServices;
  app: FastifyInstance;
  /**
   * The full admin (`sigil:admin`) of a GET request, or undefined after answering (sign-in
   * redirect, "not allowed", or a 403 page for an organization admin).
   */
  reader(request: FastifyRequest, reply: FastifyReply): Promise<ConsoleCaller | undefined>;
  /**
   * The full admin and form of a POST: CSRF checked first (403 page and no change without a valid
   * token), then the session as `reader`; undefined after answering.
   */
  writer(request: FastifyRequest, reply: FastifyReply): Promise<{ caller: ConsoleCaller; form: Params } | undefined>;
  /**
   * The user of any console session (a full admin or an organization admin) of a GET request,
   * with their role, or undefined after answering (sign-in redirect, "not allowed"). A page that
   * takes it decides itself what the role lets them see.
   */
  sessionReader(request: FastifyRequest, reply: FastifyReply): Promise<SignedIn | undefined>;
  /** The user of any console session and the form of a POST: CSRF checked first, then as `sessionReader`. */
  sessionWriter(request: FastifyRequest, reply: FastifyReply): Promise<(SignedIn & { form: Params }) | undefined>;
  /**
   * Sends the 403 page of a request the caller may not make (an organization admin on a page of
   * the full console, or of an organization they do not administer), linking to their console's
   * first page.
   */
  forbidden(request: FastifyRequest, reply: FastifyReply, role: ConsoleRole): FastifyReply;
  /**
   * Answers a change whose page shows no secret (Post/Redirect/Get): a 303 to `path` (below the
   * issuer's path, its segments already encoded) with `?done=<notice>`, which `render` shows there.
   * A reload of that page then repeats the GET, never the change.
   */
  done(reply: FastifyReply, path: string, notice: Notice): FastifyReply;
  /** Sends a console page of `section`; without a `notice` of its own, the one its `done` query names. */
  render(
    request: FastifyRequest,
    reply: FastifyReply,
    name: string,
    section: Section,
    data: Record<string, unknown>,
    status?: number,
  ): FastifyReply;
  /** A text of the request's language. */
  text(request: FastifyRequest, key: keyof Messages): string;
  /** A refused change (`refusalOf`) in the request's language; undefined for any other error. */
  refused(request: FastifyRequest, err: unknown): Refusal | undefined;
  /** The changes /admin/v1 makes too, reloaded and audited as there, made by `caller` in the console. */
  changes(caller: ConsoleCaller): AuditedChanges;
  /** The webhook changes /admin/v1/webhooks makes too, audited as there, made by `caller` in the console. */
  webhookChanges(caller: ConsoleCaller): AuditedWebhookChanges;
  /** Emits the `admin_changed` event of a change only the console makes. */
  audit(
    caller: ConsoleCaller,
    action: string,
    target: { type: string; id: string },
    changes?: Record<string, unknown>,
  ): void;
  /** Who makes a user change in the console, for the audit events of `UserAdmin`. */
  userAudit(caller: ConsoleCaller): AdminAudit;
}

/** A refused change as the console shows it (see `refusalOf`). */
export interface Refusal {
  /** The refusal in the page's language. */
  message: string;
  /** The HTTP status of the page that shows it. */
  status: number;
  /** Each refused form field's text, by field name. */
  fields: Record<string, string>;
}

/** The singular label of each kind of item a refusal or a page names. */
export const KIND_LABELS = {
  client: 'consoleKindClient',
  user: 'consoleKindUser',
  identity_resource: 'consoleKindIdentityResource',
  api_scope: 'consoleKindApiScope',
  api_resource: 'consoleKindApiResource',
  identity_provider: 'consoleKindIdentityProvider',
  organization: 'consoleKindOrganization',
} as const satisfies Record<ItemKind, keyof Messages>;

/** The text of each stable refusal reason (`RefusalDetail`): `{item}`, and `{users}` for `in_use`. */
const REASON_TEXTS = {
  exists: 'consoleRefusedExists',
  in_use: 'consoleRefusedInUse',
  built_in: 'consoleRefusedBuiltIn',
  read_only: 'consoleRefusedReadOnly',
  changed: 'consoleRefusedChanged',
  not_found: 'consoleRefusedNotFound',
} as const satisfies Record<RefusalReason, keyof Messages>;

/**
 * A refused change as the console shows it, in the page's language (`t`): an AdminError with a
 * stable reason (`detail`) as that reason's text naming the item(s) by their kind's singular label
 * and their name; any other AdminError, a ScimError or a user directory that cannot answer (503:
 * whether it holds a username is unknown, so nothing was stored) as a generic sentence, naming the field path
 * at fault when there is one (`consoleRefusedField`), followed by the service's own explanation in
 * parentheses (/admin/v1's `detail`, in English: for a password policy or a config-file check it is
 * the only text that says what to change). Every value reaches the page through the escaping template.
 * `fields` holds, for an `invalid` AdminError, a text per form field at fault (the first segment
 * of each problem's path: `scopes.0` → `scopes`), naming the full path, for the page to show next
 * to that field. Undefined for any other error (rethrown by the caller).
 */
export function refusalOf(err: unknown, t: (key: keyof Messages) => string): Refusal | undefined {
  const item = (ref: ItemRef) => format(t('consoleItemRef'), { kind: t(KIND_LABELS[ref.kind]), name: ref.name });
  const atField = (path: string, why: string) =>
    `${path === '' ? t('consoleRefusedGeneric') : format(t('consoleRefusedField'), { field: path })} (${why})`;
  if (err instanceof AdminError) {
    const fields: Record<string, string> = {};
    const problems = err.problems ?? (err.field ? [{ path: err.field, message: err.message }] : []);
    for (const p of problems) {
      const field = p.path.split('.')[0] ?? '';
      if (field !== '' && fields[field] === undefined) fields[field] = atField(p.path, p.message);
    }
    const { detail } = err;
    const first = problems.find((p) => p.path !== '');
    const message = detail
      ? format(t(REASON_TEXTS[detail.reason]), {
          item: item(detail.item),
          users: (detail.users ?? []).map(item).join(', '),
        })
      : atField(first?.path ?? '', first?.message ?? err.message);
    return {
      message,
      status: { invalid: 400, conflict: 409, read_only: 409, not_found: 404, precondition_failed: 412, forbidden: 403 }[
        err.code
      ],
      fields,
    };
  }
  if (err instanceof ScimError) return { message: atField('', err.detail), status: err.status, fields: {} };
  if (err instanceof DirectoryUnavailable) {
    const message = atField('', `user directory "${err.directory}" cannot answer; try again later`);
    return { message, status: 503, fields: {} };
  }
  return undefined;
}
