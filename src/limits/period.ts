// The quota month (api.md §8): from day 1 00:00 in Argentina (America/Argentina/Buenos_Aires,
// UTC−3 all year, no daylight saving since 2009) to day 1 of the next month.
const ART_OFFSET_MS = 3 * 60 * 60 * 1000;

export interface Period {
  start: Date;
  end: Date;
}

/** The last period computed: every request asks, and it changes once a month. */
let last: Readonly<Period> | undefined;

export const quotaPeriod = (now: Date): Period => quotaPeriodAt(now.getTime());

/** The quota month holding `t` (ms since the epoch). */
export function quotaPeriodAt(t: number): Period {
  if (last && t >= last.start.getTime() && t < last.end.getTime()) return last;
  const local = new Date(t - ART_OFFSET_MS);
  const y = local.getUTCFullYear();
  const m = local.getUTCMonth();
  last = Object.freeze({
    start: new Date(Date.UTC(y, m, 1) + ART_OFFSET_MS),
    end: new Date(Date.UTC(y, m + 1, 1) + ART_OFFSET_MS),
  });
  return last;
}
