// Reads what the SMTP sink stored: every .eml in the run's mail folder, parsed.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ParsedMail, simpleParser } from 'mailparser';

export function mailFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.eml'))
    .sort();
}

export async function readMails(dir: string): Promise<ParsedMail[]> {
  return Promise.all(mailFiles(dir).map((name) => simpleParser(readFileSync(join(dir, name)))));
}

/** The Notify message id the mailer stamped on a mail (X-Notify-Message-Id). */
export function notifyMessageId(mail: ParsedMail): number {
  return Number(mail.headers.get('x-notify-message-id'));
}
