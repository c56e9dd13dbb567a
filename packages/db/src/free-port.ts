import net from 'node:net'

/** Asks the kernel for a free TCP port on the host. */
export async function freePort (host = '127.0.0.1'): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = net.createServer()
    server.unref()
    server.once('error', reject)
    server.listen(0, host, () => {
      const address = server.address()
      server.close(() => {
        if (address !== null && typeof address === 'object') resolve(address.port)
        else reject(new Error('no port assigned'))
      })
    })
  })
}

/** True when nothing listens on host:port yet. */
export async function portIsFree (port: number, host: string): Promise<boolean> {
  return await new Promise((resolve) => {
    const server = net.createServer()
    server.unref()
    server.once('error', () => { resolve(false) })
    server.listen(port, host, () => { server.close(() => { resolve(true) }) })
  })
}
