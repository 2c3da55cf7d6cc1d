/**
 * A background job run every few seconds on this node: at most one run at a time (a tick while
 * one runs is skipped), its failures handed to `onError`, never thrown; the timer keeps no process
 * alive. The deliverers of back-channel logout tokens and of webhooks poll their queues with it.
 */

/** A started polling, until `stop`. */
export interface Polling {
  /** Stops the timer and waits for a run under way. */
  stop(): Promise<void>;
}

/**
 * Runs `run` now and every `seconds` seconds.
 * @param onError told a run's failure (the caller logs it); the polling goes on
 */
export function startPolling(run: () => Promise<void>, seconds: number, onError: (err: unknown) => void): Polling {
  let running: Promise<void> | undefined;
  const tick = () => {
    if (running) return;
    running = run()
      .catch(onError)
      .finally(() => (running = undefined));
  };
  const timer = setInterval(tick, seconds * 1000);
  timer.unref();
  tick();
  return {
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
