// The words of the unsubscribe pages, in the languages the gateway speaks (i18n/messages.ts), chosen by Accept-Language
// like every other answer.
import type { Language } from '../i18n/messages.ts';

const en = {
  'confirm.title': 'Unsubscribe',
  'confirm.text': 'Stop sending email to {address} from this sender?',
  'confirm.already': '{address} is already unsubscribed: no more email from this sender will be sent to it.',
  'confirm.button': 'Unsubscribe',
  'done.title': 'Unsubscribed',
  'done.text': 'You are unsubscribed. No more email from this sender will be sent to this address.',
  'invalid.title': 'Link not valid',
  'invalid.text': 'This unsubscribe link is not valid. Use the link in the most recent email you received.',
  'unavailable.title': 'Try again later',
  'unavailable.text': 'The request could not be handled right now. Please try again in a few moments.',
  'throttled.title': 'Too many requests',
  'throttled.text': 'Too many requests from your address. Please try again in {seconds} seconds.',
  'badRequest.title': 'Not an unsubscribe request',
  'badRequest.text': 'This request does not ask to unsubscribe. Use the button on the unsubscribe page.',
  'error.title': 'Something went wrong',
  'error.text': 'The request could not be handled. Please try again later.',
} as const;

export type UnsubscribeTextKey = keyof typeof en;

const es: Record<UnsubscribeTextKey, string> = {
  'confirm.title': 'Darse de baja',
  'confirm.text': '¿Dejar de enviar correos de este remitente a {address}?',
  'confirm.already': '{address} ya está dado de baja: este remitente no le enviará más correos.',
  'confirm.button': 'Darme de baja',
  'done.title': 'Baja confirmada',
  'done.text': 'Te has dado de baja. Este remitente no enviará más correos a esta dirección.',
  'invalid.title': 'Enlace no válido',
  'invalid.text': 'Este enlace para darse de baja no es válido. Usa el enlace del correo más reciente que hayas recibido.',
  'unavailable.title': 'Inténtalo más tarde',
  'unavailable.text': 'No se ha podido atender la solicitud en este momento. Inténtalo de nuevo en unos instantes.',
  'throttled.title': 'Demasiadas solicitudes',
  'throttled.text': 'Demasiadas solicitudes desde tu dirección. Inténtalo de nuevo dentro de {seconds} segundos.',
  'badRequest.title': 'No es una solicitud de baja',
  'badRequest.text': 'Esta solicitud no pide darse de baja. Usa el botón de la página para darse de baja.',
  'error.title': 'Algo ha fallado',
  'error.text': 'No se ha podido atender la solicitud. Inténtalo de nuevo más tarde.',
};

const catalogues: Readonly<Record<Language, Readonly<Record<UnsubscribeTextKey, string>>>> = { en, es };

export function unsubscribeText(language: Language, key: UnsubscribeTextKey, params: Readonly<Record<string, string | number>> = {}): string {
  return catalogues[language][key].replace(/\{(\w+)\}/g, (whole, name: string) => (name in params ? String(params[name]) : whole));
}
