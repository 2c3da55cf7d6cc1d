/**
 * Domain metrics: what the provider does, beside the request histogram of
 * `http/metrics.ts` and in the same registry, served by the management listener only. The counters
 * are fed by the audit events (`EventBus`'s `count` observer), the limiter's refusals and the
 * store's group commits; the gauges are read from the store and the key ring when Prometheus
 * scrapes. Every label is bounded: grant types and client ids are registered ones, sign-in methods,
 * outcomes and limit names fixed sets; no subject, username or address ever.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { nowSeconds } from '../crypto/handles.js';
import type { SigilEvent } from '../events/events.js';

/** What the gauges read when scraped. */
export interface GaugeSources {
  /** The back-channel logout outbox (`LogoutStore.outbox`). */
  outbox(): Promise<{ depth: number; oldestCreatedAt: number | null }>;
  /** Live pending authorization requests at `now`, Unix seconds (`Maintenance.liveInteractions`). */
  liveInteractions(now: number): Promise<number>;
  /** The signing key of each algorithm and when it started signing (`KeyRing.signingSince`). */
  signingSince(): { alg: string; activatesAt: number }[];
}

/** One labelled series of a counter: its count here, and how much of it the counter has been told. */
interface Cell {
  labels: Record<string, string>;
  count: number;
  reported: number;
}

/**
 * A prom-client counter with one or two labels whose series are counted as plain numbers on the hot
 * path (a Map lookup of strings already at hand and an increment: no allocation, unlike
 * prom-client's `inc`, which hashes its labels each time) and handed to the counter when
 * Prometheus scrapes.
 */
class CountedSeries {
  private readonly byFirst = new Map<string, Map<string, Cell>>();
  private readonly names: readonly string[];

  /** Registers the counter `name` in `registry`; `labelNames`: one or two. */
  constructor(
    registry: Registry,
    name: string,
    help: string,
    labelNames: readonly [string] | readonly [string, string],
  ) {
    this.names = labelNames;
    const series = this;
    new Counter({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        series.report(this);
      },
    });
  }

  /** Adds one to the series (`first`, `second`); `second` is ignored for a one-label counter. */
  inc(first: string, second = ''): void {
    let inner = this.byFirst.get(first);
    if (!inner) {
      inner = new Map();
      this.byFirst.set(first, inner);
    }
    const cell = inner.get(second);
    if (cell) cell.count++;
    else inner.set(second, { labels: this.labelsOf(first, second), count: 1, reported: 0 });
  }

  /** Tells `counter` what was counted since the last scrape. */
  private report(counter: Counter): void {
    for (const inner of this.byFirst.values())
      for (const cell of inner.values()) {
        if (cell.count > cell.reported) counter.inc(cell.labels, cell.count - cell.reported);
        cell.reported = cell.count;
      }
  }

  private labelsOf(first: string, second: string): Record<string, string> {
    const [a, b] = this.names as [string, string | undefined];
    return b === undefined ? { [a]: first } : { [a]: first, [b]: second };
  }
}

/** The domain metrics of one provider, registered in `registry`. */
export class DomainMetrics {
  private readonly tokens: CountedSeries;
  private readonly signIns: CountedSeries;
  private readonly refusals: CountedSeries;
  private readonly commits: Histogram;

  /** Registers the counters; the gauges come with `watch`, once their sources exist. */
  constructor(private readonly registry: Registry) {
    this.tokens = new CountedSeries(
      registry,
      'sigil_tokens_issued_total',
      'Token responses of the token endpoint, by grant type and client',
      ['grant_type', 'client_id'],
    );
    this.signIns = new CountedSeries(
      registry,
      'sigil_sign_ins_total',
      'Sign-ins (their first step) by method (password, passkey, upstream, password_grant) and outcome (success, failure)',
      ['method', 'outcome'],
    );
    this.refusals = new CountedSeries(
      registry,
      'sigil_limiter_refusals_total',
      'Requests refused (429) by each limit: failed_attempts, interaction_quota, device_quota, backchannel_quota, passkey_challenge_quota, dpop_proof_quota, client_metadata_quota, registration_quota, email_quota',
      ['limiter'],
    );
    this.commits = new Histogram({
      name: 'sigil_store_commit_duration_seconds',
      help: 'Duration of the store transactions that commit new grant rows (group commit), seconds',
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers: [registry],
    });
  }

  /** Registers the gauges, which read `sources` at every scrape. Call once. */
  watch(sources: GaugeSources): void {
    const registers = [this.registry];
    // Both outbox gauges come from one read of the store per scrape: prom-client collects every
    // metric of a scrape at once (Promise.all), so the second gauge joins the read in flight.
    let outboxRead: ReturnType<GaugeSources['outbox']> | undefined;
    const outbox = () => {
      outboxRead ??= sources.outbox().finally(() => {
        outboxRead = undefined;
      });
      return outboxRead;
    };
    new Gauge({
      name: 'sigil_backchannel_outbox_depth',
      help: 'Back-channel logout deliveries waiting in the outbox',
      registers,
      async collect() {
        this.set((await outbox()).depth);
      },
    });
    new Gauge({
      name: 'sigil_backchannel_outbox_oldest_age_seconds',
      help: 'Age of the oldest back-channel logout delivery in the outbox, seconds (0 when empty)',
      registers,
      async collect() {
        const { oldestCreatedAt } = await outbox();
        this.set(oldestCreatedAt === null ? 0 : Math.max(0, nowSeconds() - oldestCreatedAt));
      },
    });
    new Gauge({
      name: 'sigil_pending_interactions',
      help: 'Authorization requests waiting for a sign-in or consent',
      registers,
      async collect() {
        this.set(await sources.liveInteractions(nowSeconds()));
      },
    });
    new Gauge({
      name: 'sigil_signing_key_age_seconds',
      help: 'Time since the signing key of each algorithm started signing, seconds',
      labelNames: ['alg'],
      registers,
      collect() {
        const now = nowSeconds();
        for (const { alg, activatesAt } of sources.signingSince()) this.labels(alg).set(Math.max(0, now - activatesAt));
      },
    });
  }

  /**
   * Counts an audit event (the `EventBus`'s `count` observer): `token_issued` by grant type and
   * client, `user_login_succeeded` and `user_login_failed` by method and outcome.
   */
  readonly count = (event: Omit<SigilEvent, 'time'>): void => {
    if (event.name === 'token_issued') this.tokens.inc(event.grantType ?? 'unknown', event.clientId ?? 'unknown');
    else if (event.name === 'user_login_succeeded') this.signIns.inc(event.method ?? 'unknown', 'success');
    else if (event.name === 'user_login_failed') this.signIns.inc(event.method ?? 'unknown', 'failure');
  };

  /** Counts a request refused by the limit `limiter` (`FailureLimiter.onRefused`). */
  readonly refused = (limiter: string): void => {
    this.refusals.inc(limiter);
  };

  /** Records one group commit's duration, seconds (`openStore`'s `timedCommit`). */
  readonly timedCommit = (seconds: number): void => {
    this.commits.observe(seconds);
  };
}
