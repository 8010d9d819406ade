// Interleaved output of several processes, one line at a time, each prefixed with its padded (and, on a terminal,
// coloured) name, e.g. `gateway      | {"level":"info",...}`. Every line is also kept, bounded, so a failed test
// can print what the services said even when nothing was shown.
import type { Readable } from 'node:stream';

/** Where the lines go: process.stdout, any writable, or nothing at all (logs are still kept). */
export interface OutputTarget {
  write(text: string): unknown;
  readonly isTTY?: boolean;
}

export interface LogLine {
  readonly source: string;
  readonly text: string;
  readonly at: Date;
}

const colours = [36, 33, 35, 32, 34, 96, 93, 95, 92, 94];
// One assignment per process, not per output: the launcher's lines and the stack's share one terminal.
const colourOf = new Map<string, number>();

export class PrefixedOutput {
  readonly #target: OutputTarget | null;
  readonly #colour: boolean;
  readonly #width: number;
  readonly #keep: number;
  readonly #lines: LogLine[] = [];

  /** `width` pads names to line up; `keep` bounds the lines remembered. */
  constructor(options: { target: OutputTarget | null; width: number; keep?: number }) {
    this.#target = options.target;
    this.#colour = options.target?.isTTY === true && process.env.NO_COLOR === undefined;
    this.#width = options.width;
    this.#keep = options.keep ?? 20_000;
  }

  line(source: string, text: string): void {
    this.#lines.push({ source, text, at: new Date() });
    // Trimmed a `keep` at a time, not a line at a time: dropping the oldest line of a full array moves every other one
    // (about 85 µs a line at 20,000 kept, the launcher's CPU while services log under load).
    if (this.#lines.length >= 2 * this.#keep) this.#lines.splice(0, this.#lines.length - this.#keep);
    this.#target?.write(`${this.#prefix(source)} | ${text}\n`);
  }

  #prefix(source: string): string {
    const padded = source.padEnd(this.#width);
    if (!this.#colour) return padded;
    let colour = colourOf.get(source);
    if (colour === undefined) {
      colour = colours[colourOf.size % colours.length] ?? 36;
      colourOf.set(source, colour);
    }
    return `\u001b[${colour}m${padded}\u001b[0m`;
  }

  /** Forwards a child's stream line by line; a last line without newline is flushed when the stream ends. */
  pipe(source: string, stream: Readable): void {
    let pending = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      const parts = (pending + chunk).split('\n');
      pending = parts.pop() ?? '';
      for (const part of parts) this.line(source, part.replace(/\r$/, ''));
    });
    stream.on('end', () => {
      if (pending !== '') this.line(source, pending);
      pending = '';
    });
  }

  /** Lines kept so far, oldest first; only those of `source` when given. */
  lines(source?: string): readonly LogLine[] {
    const kept = this.#lines.slice(-this.#keep);
    return source === undefined ? kept : kept.filter((line) => line.source === source);
  }

  /** Kept lines as the terminal would have shown them (uncoloured), for a failing test to print. */
  text(source?: string): string {
    return this.lines(source)
      .map((line) => `${line.source.padEnd(this.#width)} | ${line.text}\n`)
      .join('');
  }
}
