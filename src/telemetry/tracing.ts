/**
 * OpenTelemetry tracing: on only when the standard `OTEL_*` environment variables ask
 * for traces; otherwise nothing of OpenTelemetry is loaded and nothing is wrapped, so tracing off
 * costs nothing. When on, `startTracing` loads the SDK (`otel.ts`) and hands back what Sigil hooks
 * into its parts: the request span's route, child spans for the calls of chosen objects (store,
 * upstream providers, logout deliveries), the request's client and grant type from the audit
 * events, and the trace id for the audit line.
 */
import type { Tracing } from './otel.js';

// Type-only: the module itself is imported by `startTracing` alone.
export type { Tracing } from './otel.js';

/**
 * Whether `env` asks for traces, by the OpenTelemetry SDK's environment variables: not with
 * `OTEL_SDK_DISABLED=true` nor `OTEL_TRACES_EXPORTER=none`; yes with any other
 * `OTEL_TRACES_EXPORTER`, or with an OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`,
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`).
 */
export function tracingRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporter = env.OTEL_TRACES_EXPORTER?.trim();
  if (exporter) return exporter !== 'none';
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

let started: Promise<Tracing> | undefined;

/**
 * Starts the OpenTelemetry SDK once per process (every `createSigil` of the process shares it),
 * configured by the `OTEL_*` variables (exporter, endpoint, protocol, sampler, service name), with
 * the HTTP, pg and ioredis instrumentations.
 * @returns the running tracer, or undefined when `tracingRequested` is false (nothing is loaded).
 */
export async function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<Tracing | undefined> {
  if (!tracingRequested(env)) return undefined;
  started ??= import('./otel.js').then((otel) => otel.start());
  return started;
}
