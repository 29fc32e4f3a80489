/** Source of the current time. Injected everywhere time matters so tests can pin it. */
export interface Clock {
  now(): Date;
}

/** The wall clock. */
export const systemClock: Clock = { now: () => new Date() };
