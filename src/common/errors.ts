// The one coded-error base class. Every layer keeps its own catalogue (a union of codes and a hint per
// code) and a subclass of CodedError that names it: GpuError, ModelFileError, EnvError, ConfigError,
// MarftError, CheckpointError, the worker's WorkerFail. One message format everywhere, so every front-end
// can split the hint off the message the same way: `${message}\n  hint: ${hint}`.

/** The separator between an error's message and its hint (front-ends split on it). */
export const HINT_SEPARATOR = '\n  hint: ';

export class CodedError<C extends string = string> extends Error {
  readonly code: C;
  /** What to do next. */
  readonly hint: string;
  /** `name` is given, not taken from the class: the browser bundle minifies class names. */
  constructor(name: string, code: C, message: string, hint: string) {
    super(`${message}${HINT_SEPARATOR}${hint}`);
    this.name = name;
    this.code = code;
    this.hint = hint;
  }
}

/** The message of anything thrown. */
export const errorMessage = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/** The message of a CodedError without its hint (any other error's message as it is). */
export const messageWithoutHint = (message: string): string => message.split(HINT_SEPARATOR)[0];
