// How times, states and SMTP replies look in the panel. Times are UTC in one unambiguous form in every language, in a
// <time> element carrying the exact instant.
import type { Translate } from '../i18n/texts.ts';
import { type Html, html } from './html.ts';

const states = ['scheduled', 'queued', 'sending', 'deferred', 'sent', 'failed', 'bounced', 'complained', 'canceled'] as const;
export type StateName = (typeof states)[number];

export function isState(value: string): value is StateName {
  return (states as readonly string[]).includes(value);
}

export const messageStates: readonly StateName[] = states;

/** `2026-01-31 09:30:05 UTC`, or '' for an unset time. */
export function timeText(iso: string): string {
  const time = Date.parse(iso);
  if (!iso || Number.isNaN(time)) return '';
  return `${new Date(time).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

export function timeElement(iso: string, empty = '—'): Html {
  const text = timeText(iso);
  return text ? html`<time datetime="${iso}">${text}</time>` : html`${empty}`;
}

export function stateLabel(t: Translate, state: string): string {
  return isState(state) ? t(`state.${state}`) : state;
}

/** A state as a badge: the word is always there, so the colour is never the only cue. */
export function stateBadge(t: Translate, state: string): Html {
  return html`<span class="state state-${isState(state) ? state : 'unknown'}" data-state="${state}">${stateLabel(t, state)}</span>`;
}

/** The SMTP reply of an event, code first (as dispatch-svc's formatSmtpReply does for the message's last one). */
export function smtpReply(code: number, response: string): string {
  const text = response.trim();
  if (!code) return text;
  return text.startsWith(String(code)) ? text : `${code} ${text}`.trim();
}
