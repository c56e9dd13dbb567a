import type { Static, TObject } from '@sinclair/typebox'
import { ConfigError, fromEnvironment } from '@esp/config'
import { launch, type LaunchConfig, type LaunchOptions } from './launch.js'

/** Entry point of a service's main.ts: configuration errors end the process with every problem listed. */
export async function main<S extends TObject> (
  schema: S,
  options: Omit<LaunchOptions<Static<S> & LaunchConfig>, 'config' | 'explicit'>
): Promise<void> {
  try {
    const { config, explicit } = fromEnvironment(schema)
    await launch({ ...options, config: config as Static<S> & LaunchConfig, explicit })
  } catch (err) {
    console.error(err instanceof ConfigError ? err.message : `${options.title} failed to start: ${err instanceof Error ? err.message : String(err)}`)
    process.exit(1)
  }
}
