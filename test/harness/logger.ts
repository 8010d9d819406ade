// The logger tests hand to the code under test when what it logs is not what they look at: it writes nothing, not
// even to a stream it would have to open. Imported from the platform's logger module alone, so even the platform's
// own unit tests can use it without loading the whole package.
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '@notify/platform/logger';

export function silentLogger(service = 'test'): Logger {
  return createLogger(service, 'silent', new Writable({ write: (_chunk, _encoding, done) => done() }));
}
