import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { CliError, ExitCode } from '../exit-codes.ts';

/** The package's own root (src/ or dist/ sit at the same depth): its bundles/ and rego/ ship with it. */
const PACKAGE_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/**
 * Where policy defaults (bundles/acs.tar.gz, else rego/) are looked up: the working directory when it has
 * either, else the package itself, so an installed `guardian serve` run from any directory has the ACS library.
 */
function policyDefaultsDir(): string | undefined {
  const cwd = process.cwd();
  return existsSync(resolve(cwd, 'bundles/acs.tar.gz')) || existsSync(resolve(cwd, 'rego')) ? undefined : PACKAGE_ROOT;
}

/**
 * Why `serve` could not start, as an exit code: a --bundle file that is not a bundle (or not a Wasm module), or a
 * custom builtins module that is missing or malformed, is bad input (2); a well-formed bundle the lifecycle refuses (signature, smoke tests) is a failure found
 * (1); anything else is the store or the key material being unavailable (4).
 */
async function startFailureCode(err: unknown): Promise<ExitCode> {
  const [{ BundleError }, { LifecycleError }, { CustomBuiltinsModuleError }] = await Promise.all([
    import('../../rego/bundle/index.ts'),
    import('../../lifecycle/index.ts'),
    import('../../policy/custom-builtins.ts'),
  ]);
  if (err instanceof CustomBuiltinsModuleError) return ExitCode.Usage;
  if (err instanceof BundleError || (err instanceof Error && err.name === 'CompileError')) return ExitCode.Usage;
  if (err instanceof LifecycleError) return err.code === 'invalid_bundle' ? ExitCode.Usage : ExitCode.Failed;
  return ExitCode.Unavailable;
}

interface ServeFlags {
  port: string;
  host: string;
  dataDir: string;
  stdio?: boolean;
  bundle?: string;
  skewWindowMs?: string;
  evalTimeoutMs?: string;
  builtins?: string;
}

/** `guardian serve [--port N] [--host H] [--data-dir DIR] [--stdio] [--bundle FILE] [--builtins MODULE] [--skew-window-ms MS] [--eval-timeout-ms MS]`. */
export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('Run the ACS Guardian: POST /acs over HTTP (default 127.0.0.1:8787), or Content-Length framed stdio')
    .option('--port <n>', 'HTTP port (0 = ephemeral)', '8787')
    .option('--host <h>', 'HTTP listen address', '127.0.0.1')
    .option('--data-dir <dir>', 'PGlite database and dev HMAC key location (when DATABASE_URL is unset)', '.guardian')
    .option('--stdio', 'serve ACS on stdin/stdout instead of HTTP')
    .option(
      '--bundle <file>',
      'policy bundle (.tar.gz) or Wasm module; default bundles/acs.tar.gz, else rego/ compiled at start (in the working directory, else in the package)',
    )
    .option(
      '--builtins <module.mjs>',
      "the deployment's custom builtins: an ES module default-exporting { name: function } (default GUARDIAN_POLICY_BUILTINS)",
    )
    .option('--skew-window-ms <ms>', 'replay-protection timestamp window (ACS §10.3)', '300000')
    .option('--eval-timeout-ms <ms>', 'policy evaluation deadline; a late evaluation is denied (fail closed)', '100')
    .action(async (flags: ServeFlags) => {
      const port = Number(flags.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535)
        throw new CliError(`--port must be 0..65535 (got ${flags.port})`, ExitCode.Usage);
      const skew = Number(flags.skewWindowMs);
      if (!Number.isInteger(skew) || skew < 0)
        throw new CliError(`--skew-window-ms must be a non-negative integer`, ExitCode.Usage);
      const evalTimeout = Number(flags.evalTimeoutMs);
      if (!Number.isFinite(evalTimeout) || evalTimeout <= 0)
        throw new CliError(`--eval-timeout-ms must be a positive number`, ExitCode.Usage);
      if (flags.bundle !== undefined && !existsSync(flags.bundle))
        throw new CliError(`--bundle ${flags.bundle}: no such file`, ExitCode.Usage);
      // The embedded store opens on a thread of its own: started now, it overlaps loading the server's modules
      // (openStore takes it over; the same data dir and store rules as the runtime's, below).
      if (!process.env.DATABASE_URL)
        (await import('../../store/pglite/early.ts')).openPgliteEarly(resolve(flags.dataDir));
      // Loaded lazily so other commands do not pay for the server's imports.
      const { openGuardianRuntime, serveStdio, startHttpServer, StartupTimings } = await import(
        '../../server/index.ts'
      );
      const timings = StartupTimings.enabled(process.env) ? new StartupTimings() : undefined;
      timings?.sinceProcessStart('modules');
      let runtime;
      try {
        const defaultsDir = flags.bundle === undefined ? policyDefaultsDir() : undefined;
        runtime = await openGuardianRuntime({
          timings,
          // The data dir stays relative to the working directory even when policy defaults come from the package.
          dataDir: resolve(flags.dataDir),
          ...(defaultsDir ? { cwd: defaultsDir } : {}),
          bundlePath: flags.bundle,
          skewWindowMs: skew,
          evaluationTimeoutMs: evalTimeout,
          ...(flags.builtins !== undefined ? { customBuiltinsModule: flags.builtins } : {}),
          stdio: flags.stdio === true,
        });
      } catch (err) {
        throw new CliError(
          `cannot start: ${err instanceof Error ? err.message : String(err)}`,
          await startFailureCode(err),
        );
      }
      // In stdio mode stdout carries the protocol, so every log line goes to stderr (JSON, src/telemetry/logging).
      const logger = runtime.logger;
      const say = (line: string): void => logger.info(line);
      const { key } = runtime;
      if (key.source === 'generated')
        say(
          `guardian: generated a development HMAC key at ${key.path} (fingerprint ${key.fingerprint}); share it with your agents, never commit it`,
        );
      else
        say(
          `guardian: HMAC key from ${key.source === 'env' ? 'GUARDIAN_HMAC_IKM' : key.path} (fingerprint ${key.fingerprint})`,
        );
      say(`guardian: policy ${runtime.policySource} (revision ${runtime.engine.revision})`);
      if (runtime.customBuiltins)
        say(
          `guardian: custom builtins ${runtime.customBuiltins.names.join(', ') || '(none)'} from ${runtime.customBuiltins.module}`,
        );
      if (flags.stdio) {
        say('guardian: serving ACS on stdio (Content-Length framing)');
        const answered = timings?.begin('first_answer');
        await serveStdio(runtime.guardian, process.stdin, process.stdout, {
          onFirstAnswer: () => {
            if (timings && answered) {
              answered();
              process.stderr.write(JSON.stringify({ startup: timings.report() }) + '\n');
            }
            runtime
              .warm()
              .catch((err: unknown) => say(`guardian: ${err instanceof Error ? err.message : String(err)}`));
          },
        });
        await runtime.close();
        return;
      }
      let server;
      const listened = timings?.begin('listen');
      try {
        server = await startHttpServer(runtime.guardian, {
          host: flags.host,
          port,
          ready: runtime.ready,
          ...(runtime.admin
            ? { admin: runtime.admin, console: (await import('../../console/index.ts')).createConsoleApp() }
            : {}),
          ...(runtime.telemetry.metricsApp ? { metrics: runtime.telemetry.metricsApp } : {}),
        });
      } catch (err) {
        await runtime.close();
        throw new CliError(
          `cannot listen on ${flags.host}:${port}: ${err instanceof Error ? err.message : String(err)}`,
          ExitCode.Unavailable,
        );
      }
      process.stdout.write(`guardian: listening on ${server.url}\n`);
      if (timings && listened) {
        listened();
        process.stderr.write(JSON.stringify({ startup: timings.report() }) + '\n');
      }
      runtime.warm().catch((err: unknown) => say(`guardian: ${err instanceof Error ? err.message : String(err)}`));
      const signal = await new Promise<NodeJS.Signals>((resolveStop) => {
        process.once('SIGINT', resolveStop);
        process.once('SIGTERM', resolveStop);
      });
      // Each stage is named as it starts, so a shutdown that stalls says where.
      say(`guardian: ${signal}: closing the HTTP listener`);
      await server.close();
      await runtime.close((stage) => say(`guardian: ${signal}: ${stage}`));
      say('guardian: stopped');
    });
}
