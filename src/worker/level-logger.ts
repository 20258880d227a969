import type { LogLevel, LogMetadata, Logger } from '@temporalio/common';

/** A Temporal `Logger` whose level methods all go through its one `log`: subclasses write only that. */
export abstract class LevelLogger implements Logger {
  abstract log(level: LogLevel, message: string, meta?: LogMetadata): void;

  trace(message: string, meta?: LogMetadata): void {
    this.log('TRACE', message, meta);
  }
  debug(message: string, meta?: LogMetadata): void {
    this.log('DEBUG', message, meta);
  }
  info(message: string, meta?: LogMetadata): void {
    this.log('INFO', message, meta);
  }
  warn(message: string, meta?: LogMetadata): void {
    this.log('WARN', message, meta);
  }
  error(message: string, meta?: LogMetadata): void {
    this.log('ERROR', message, meta);
  }
}
