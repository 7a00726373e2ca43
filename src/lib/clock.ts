// Every service reads time through a Clock so tests can move it (DEVELOPERS.md, "Time in tests").
export interface Clock {
  now(): Date;
  /** The same instant in ms since the epoch, without a Date (the per-request paths read it). */
  ms(): number;
}

export const systemClock: Clock = { now: () => new Date(), ms: () => Date.now() };

/** A clock tests can set and advance; starts at the real time unless told otherwise. */
export class ManualClock implements Clock {
  private t: number;
  constructor(start: Date | number = Date.now()) {
    this.t = typeof start === 'number' ? start : start.getTime();
  }
  now(): Date {
    return new Date(this.t);
  }
  ms(): number {
    return this.t;
  }
  set(at: Date | string | number): void {
    this.t = new Date(at).getTime();
  }
  advance(ms: number): void {
    this.t += ms;
  }
}
