// The quota month (api.md §8): from day 1 00:00 in Argentina (America/Argentina/Buenos_Aires,
// UTC−3 all year, no daylight saving since 2009) to day 1 of the next month.
const ART_OFFSET_MS = 3 * 60 * 60 * 1000;

export interface Period {
  start: Date;
  end: Date;
}

export function quotaPeriod(now: Date): Period {
  const local = new Date(now.getTime() - ART_OFFSET_MS);
  const y = local.getUTCFullYear();
  const m = local.getUTCMonth();
  return {
    start: new Date(Date.UTC(y, m, 1) + ART_OFFSET_MS),
    end: new Date(Date.UTC(y, m + 1, 1) + ART_OFFSET_MS),
  };
}
