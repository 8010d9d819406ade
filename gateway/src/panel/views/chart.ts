// A small grouped bar chart as inline SVG, drawn on the server: no script, no library. Colours come from panel.css
// classes (the page's CSP allows no inline style); every bar has a tooltip, and the numbers are also given as a table.
import type { dispatch } from '@notify/proto';
import type { Translate } from '../i18n/texts.ts';
import { type Html, html } from './html.ts';

export const counts = ['accepted', 'sent', 'deferred', 'failed'] as const;
export type CountName = (typeof counts)[number];

const size = { width: 640, height: 200, left: 40, right: 8, top: 12, bottom: 28 } as const;

/** 1, 2, 4, 6, 8, 10, 20, 40...: a round top for the axis at or above `value`, even (so its half is whole) from 2 on. */
export function niceCeiling(value: number): number {
  if (value <= 1) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(value));
  const step = [1, 2, 4, 6, 8, 10].find((factor) => factor * magnitude >= value) ?? 10;
  return step * magnitude;
}

/** `09:35`: buckets are minutes or hours of a UTC day. */
const clock = (iso: string): string => iso.slice(11, 16);

export function barChart(options: { id: string; t: Translate; series: dispatch.OverviewSeries__Output; labelEvery: number }): Html {
  const { id, t, series } = options;
  const buckets = series.buckets;
  const plotWidth = size.width - size.left - size.right;
  const plotHeight = size.height - size.top - size.bottom;
  const top = niceCeiling(Math.max(0, ...buckets.flatMap((bucket) => counts.map((count) => bucket[count]))));
  const groupWidth = plotWidth / Math.max(1, buckets.length);
  const barWidth = (groupWidth * 0.8) / counts.length;
  const y = (value: number): number => size.top + plotHeight - (value / top) * plotHeight;

  const bars = buckets.flatMap((bucket, index) =>
    counts
      .filter((count) => bucket[count] > 0)
      .map((count) => {
        const x = size.left + index * groupWidth + groupWidth * 0.1 + counts.indexOf(count) * barWidth;
        const height = size.top + plotHeight - y(bucket[count]);
        return html`<rect class="bar bar-${count}" x="${x.toFixed(1)}" y="${y(bucket[count]).toFixed(1)}" width="${barWidth.toFixed(1)}" height="${Math.max(1, height).toFixed(1)}"><title>${clock(bucket.start)} UTC · ${t(`count.${count}`)}: ${bucket[count]}</title></rect>`;
      }),
  );
  // A middle line only where it falls on a whole number of messages.
  const lines = Number.isInteger(top / 2) ? [0, top / 2, top] : [0, top];
  const grid = lines.map(
    (value) =>
      html`<line class="grid" x1="${size.left}" x2="${size.width - size.right}" y1="${y(value).toFixed(1)}" y2="${y(value).toFixed(1)}"></line><text class="axis" x="${size.left - 6}" y="${(y(value) + 4).toFixed(1)}" text-anchor="end">${value}</text>`,
  );
  const labels = buckets
    .map((bucket, index) => ({ bucket, index }))
    .filter(({ index }) => index % options.labelEvery === 0)
    .map(
      ({ bucket, index }) =>
        html`<text class="axis" x="${(size.left + index * groupWidth + groupWidth / 2).toFixed(1)}" y="${size.height - 8}" text-anchor="middle">${clock(bucket.start)}</text>`,
    );
  const first = buckets[0]?.start ?? '';
  const lastStart = Date.parse(buckets.at(-1)?.start ?? '');
  const end = Number.isNaN(lastStart) ? '' : new Date(lastStart + series.bucketSeconds * 1000).toISOString();
  const description = t('overview.chart', { minutes: series.bucketSeconds / 60, from: clock(first), to: clock(end) });

  return html`<svg class="chart" viewBox="0 0 ${size.width} ${size.height}" role="img" aria-labelledby="${id}-desc">
<desc id="${id}-desc">${description}</desc>
${grid}${bars}${labels}
</svg>`;
}

export function totals(series: dispatch.OverviewSeries__Output): Record<CountName, number> {
  const sum = { accepted: 0, sent: 0, deferred: 0, failed: 0 };
  for (const bucket of series.buckets) for (const count of counts) sum[count] += bucket[count];
  return sum;
}

/** The legend doubles as the totals: a swatch, the name and the number, so colour is never the only cue. */
export function legend(t: Translate, series: dispatch.OverviewSeries__Output): Html {
  const sum = totals(series);
  return html`<ul class="legend">${counts.map(
    (count) =>
      html`<li><span class="swatch swatch-${count}" aria-hidden="true"></span>${t(`count.${count}`)}: <strong data-count="${count}">${sum[count]}</strong></li>`,
  )}</ul>`;
}

export function dataTable(t: Translate, series: dispatch.OverviewSeries__Output): Html {
  const rows = series.buckets.map(
    (bucket) => html`<tr><th scope="row">${clock(bucket.start)}</th>${counts.map((count) => html`<td>${bucket[count]}</td>`)}</tr>`,
  );
  return html`<details><summary>${t('overview.showNumbers')}</summary>
<table class="numbers">
  <thead><tr><th scope="col">${t('overview.bucket')}</th>${counts.map((count) => html`<th scope="col">${t(`count.${count}`)}</th>`)}</tr></thead>
  <tbody>${rows}</tbody>
</table></details>`;
}
