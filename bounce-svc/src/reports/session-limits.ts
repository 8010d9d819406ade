// The limits on a client's SMTP session that smtp-server has no option for: connections per client address, a
// deadline for the whole session and one for each command, and counts of commands and recipients. bounce-svc is an
// MX anyone may connect to; without them one host could take every connection slot, and a client that drips a byte
// at a time or repeats NOOP would hold its slot (and some CPU) for as long as it liked. smtp-server's own idle timeout
// only fires on silence, which a drip never leaves.
import type { SMTPServer, SMTPServerSession } from 'smtp-server';

type Connection = SMTPServer['connections'] extends Set<infer C> ? C : never;

export interface SessionLimitOptions {
  /** Sessions one client address may hold at once. */
  maxClientsPerAddress: number;
  /** Longest session, from the greeting. */
  sessionTimeoutMs: number;
  /** Time a client has for each command, counted from the previous one (or the greeting). */
  commandTimeoutMs: number;
  /** Commands one session may send. */
  maxCommands: number;
  /** RCPT TO commands one session may send. */
  maxRecipients: number;
}

/** An smtp-server handler error that ends the session with its reply (smtp-server sends `responseCode message`). */
function closingReply(message: string): Error & { responseCode: number } {
  return Object.assign(new Error(message), { responseCode: 421 });
}

/** One admitted session: its two clocks and its counts. */
class LimitedSession {
  readonly address: string;
  readonly #connection: Connection;
  readonly #options: SessionLimitOptions;
  readonly #sessionTimer: NodeJS.Timeout;
  #commandTimer: NodeJS.Timeout | undefined;
  #commands = 0;
  #recipients = 0;
  #stopped = false;

  constructor(connection: Connection, address: string, options: SessionLimitOptions) {
    this.address = address;
    this.#connection = connection;
    this.#options = options;
    this.#sessionTimer = setTimeout(() => this.#end('4.4.2 Session time limit reached, closing'), options.sessionTimeoutMs).unref();
    this.startCommandClock();
    this.#countCommands();
  }

  /**
   * smtp-server has no hook that sees every command (NOOP, RSET, HELP... reach no handler of ours), so its command
   * dispatcher is wrapped; the dispatcher runs on complete command lines only, never on a message's content.
   */
  #countCommands(): void {
    const connection = this.#connection;
    const dispatch = connection._onCommand.bind(connection);
    connection._onCommand = (command, callback) => {
      this.#commands += 1;
      if (this.#commands > this.#options.maxCommands) {
        this.#end('4.7.0 Too many commands in one session, closing');
        return;
      }
      this.startCommandClock();
      dispatch(command, callback);
    };
  }

  /** A RCPT TO: false once the session has sent its share. */
  takeRecipient(): boolean {
    this.#recipients += 1;
    return this.#recipients <= this.#options.maxRecipients;
  }

  /** While a message is received and answered no command is due: its time counts against the session's only. */
  stopCommandClock(): void {
    clearTimeout(this.#commandTimer);
    this.#commandTimer = undefined;
  }

  /** The next command is due within commandTimeoutMs. */
  startCommandClock(): void {
    if (this.#stopped) return;
    clearTimeout(this.#commandTimer);
    this.#commandTimer = setTimeout(() => this.#end('4.4.2 Timeout waiting for a command, closing'), this.#options.commandTimeoutMs).unref();
  }

  /** The session is over: no clock of its own runs any more. */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#sessionTimer);
    this.stopCommandClock();
  }

  #end(reply: string): void {
    this.stop();
    // A 421 makes smtp-server close the connection after the reply.
    this.#connection.send(421, reply);
  }
}

export class SessionLimits {
  readonly #server: SMTPServer;
  readonly #options: SessionLimitOptions;
  /** Admitted sessions by session id. */
  readonly #sessions = new Map<string, LimitedSession>();
  readonly #perAddress = new Map<string, number>();

  constructor(server: SMTPServer, options: SessionLimitOptions) {
    this.#server = server;
    this.#options = options;
  }

  /**
   * For onConnect: admits the session and starts its clocks, or returns the 421 that refuses it when its address
   * holds its share of sessions already.
   */
  admit(session: SMTPServerSession): Error | undefined {
    const address = session.remoteAddress;
    const open = this.#perAddress.get(address) ?? 0;
    if (open >= this.#options.maxClientsPerAddress) return closingReply('4.7.0 Too many connections from your address, try again later');
    const connection = this.#connectionOf(session);
    // smtp-server calls onConnect for connections it holds; should a version not, the session is refused, not left unlimited.
    if (!connection) return closingReply('4.3.0 Session lost, try again later');
    this.#perAddress.set(address, open + 1);
    this.#sessions.set(session.id, new LimitedSession(connection, address, this.#options));
    return undefined;
  }

  /** For onClose: stops the session's clocks and frees its place. */
  release(session: SMTPServerSession): void {
    const limited = this.#sessions.get(session.id);
    if (!limited) return;
    limited.stop();
    this.#sessions.delete(session.id);
    const open = (this.#perAddress.get(limited.address) ?? 1) - 1;
    if (open > 0) this.#perAddress.set(limited.address, open);
    else this.#perAddress.delete(limited.address);
  }

  /** The admitted session, for the handlers that count against its limits. */
  of(session: SMTPServerSession): LimitedSession | undefined {
    return this.#sessions.get(session.id);
  }

  /** onConnect is handed the session only; the connection it belongs to is found among the server's (at most maxClients). */
  #connectionOf(session: SMTPServerSession): Connection | undefined {
    for (const connection of this.#server.connections) if (connection.session === session) return connection;
    return undefined;
  }
}
