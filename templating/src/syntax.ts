// Liquid syntax is checked when a template is saved (dispatch-svc), so an unclosed tag is the operator's error at
// `notifyctl` time and not a failed delivery later.
import { Liquid } from 'liquidjs';

export class LiquidSyntax {
  // Parsing only: no filesystem, no rendering, so the defaults are safe here.
  readonly #liquid = new Liquid();

  /** The parser's complaint about `source` (with line and column), or undefined when it parses. */
  problem(source: string): string | undefined {
    try {
      this.#liquid.parse(source);
      return undefined;
    } catch (error) {
      return (error as Error).message;
    }
  }
}
