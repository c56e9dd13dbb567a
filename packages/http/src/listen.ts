export interface Bindable {
  /** binds to the port (0 = any free one) and resolves to the port taken */
  (port: number): Promise<number>
}

/**
 * Binds a server. A busy default port falls back to a free one (DESIGN.md, Defaults); a port the
 * operator set explicitly is a hard error with a clear message, because something else would be
 * answering on the address they expect.
 */
export async function listenWithFallback (bind: Bindable, options: { port: number, explicit: boolean, name: string, key: string }): Promise<{ port: number, fellBack: boolean }> {
  try {
    return { port: await bind(options.port), fellBack: false }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err
    if (options.explicit) {
      throw new Error(`${options.name} port ${options.port} is already in use (set by ${options.key}); free it or choose another ${options.key}`)
    }
    return { port: await bind(0), fellBack: true }
  }
}
