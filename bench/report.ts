// The figures of one `npm run bench` run: each printed next to its floor as it is measured, and
// written together to bench/results.json at the end.
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';

export interface Figure {
  figure: string;
  value: number;
  unit: string;
  floor: string;
  floorValue: number | null;
  ratio: number | null;
  goal: string;
  /** null: reported, no goal. */
  pass: boolean | null;
  note?: string;
}

const figures: Figure[] = [];

export const fmt = (n: number): string => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(2));

export function record(f: Figure): void {
  figures.push(f);
  const r = f.ratio === null ? '' : `ratio ${f.ratio.toFixed(2)}`;
  const verdict = f.pass === null ? 'report' : f.pass ? 'PASS' : 'MISS';
  console.log(
    `${f.figure.padEnd(58)} ${fmt(f.value).padStart(9)} ${f.unit.padEnd(6)} | floor ${f.floor}: ${f.floorValue === null ? '-' : fmt(f.floorValue)} | ${r.padEnd(11)} goal ${f.goal.padEnd(8)} ${verdict}${f.note ? `  (${f.note})` : ''}`,
  );
}

export function writeResults(database: string): string {
  const out = new URL('./results.json', import.meta.url).pathname;
  const run = { at: new Date().toISOString(), database, redis: Boolean(process.env.REDIS_URL), cpus: cpus().length, figures };
  writeFileSync(out, `${JSON.stringify(run, null, 2)}\n`);
  return out;
}
