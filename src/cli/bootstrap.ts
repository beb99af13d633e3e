// The one bootstrap of the command-line entries (npm run db:migrate, rebuild, verify-state, config):
// configuration → dependencies → the command → close → exit code.
import { type AppConfig, loadConfig } from '../config';
import type { Deps } from '../deps';

export interface CliOptions {
  /** The command's name, in the line printed when it throws: `<name> failed: <message>`. */
  name: string;
  /** The exit code when the command throws (default 1). */
  failureCode?: number;
}

/** A command: does its work and resolves to the process's exit code. */
type Command<T> = (input: T) => Promise<number>;

/** Runs a command that needs neither configuration nor dependencies, then exits with its code. */
export async function runCli(opts: CliOptions, command: Command<void>): Promise<never> {
  process.exit(await guarded(opts, () => command()));
}

/**
 * Loads the configuration (an invalid one: its message, exit 1), runs the command with it, and exits
 * with its code.
 */
export async function runCliWithConfig(opts: CliOptions, command: Command<AppConfig>): Promise<never> {
  const config = configOrExit();
  process.exit(await guarded(opts, () => command(config)));
}

/**
 * Loads the configuration, opens the dependencies (Redis, Postgres, catalog), runs the command with
 * them, closes them, and exits with the command's code.
 */
export async function runCliWithDeps(opts: CliOptions, command: Command<Deps>): Promise<never> {
  const config = configOrExit();
  // Loaded here, not at the top: the config CLI talks HTTP and needs none of the server's modules.
  const { closeDeps, createDeps } = await import('../deps');
  const deps = await createDeps(config);
  const code = await guarded(opts, () => command(deps));
  await closeDeps(deps);
  process.exit(code);
}

function configOrExit(): AppConfig {
  try {
    return loadConfig();
  } catch (err) {
    console.error((err as Error).message);
    process.exit(1);
  }
}

async function guarded(opts: CliOptions, run: () => Promise<number>): Promise<number> {
  try {
    return await run();
  } catch (err) {
    console.error(`${opts.name} failed: ${(err as Error).message}`);
    return opts.failureCode ?? 1;
  }
}
