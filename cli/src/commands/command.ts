// The shape of a notifyctl command: its flags, how it turns them into a request (every usage mistake caught there,
// before any connection is opened), and how it executes that request.
import type { Flags, OptionSpecs } from '../args.ts';
import type { Connections, Target } from '../connections.ts';
import type { Io } from '../output.ts';

/**
 * A command that ran and found what it checks for wrong (a DNS record missing): its verdict goes to stderr and
 * notifyctl exits 1, so that a script can trust the exit status alone.
 */
export class CheckFailed extends Error {
  override name = 'CheckFailed';
}

export interface Context {
  readonly connections: Connections;
  readonly io: Io;
  readonly json: boolean;
}

/** A validated invocation: the request it will send (what tests look at) and the call itself. */
export interface Prepared {
  readonly request: object;
  execute(context: Context): Promise<void>;
}

export interface Command {
  readonly name: string;
  readonly summary: string;
  readonly options: OptionSpecs;
  /** Replaces the generated usage line when flags relate in ways the specs cannot say (either/or). */
  readonly usage?: string;
  /** The server this command talks to, when it is not its group's. */
  readonly target?: Target;
  prepare(flags: Flags): Prepared | Promise<Prepared>;
}

export interface CommandGroup {
  readonly name: string;
  readonly summary: string;
  /** The server every command of the group talks to. */
  readonly target: Target;
  readonly commands: readonly Command[];
}
