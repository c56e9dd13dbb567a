import net from 'node:net'

export interface RawAnswer {
  status: number
  /** header names in lower case; a repeated header's values joined by ", " */
  headers: Record<string, string>
  body: string
  json: unknown
}

/**
 * One HTTP/1.1 request written byte for byte on a socket: the request line goes out exactly as a
 * client library would have written it (unencoded brackets, doubled slashes, `+` and `%20` in the
 * query), with nothing normalised on the way.
 */
export async function rawHttp (port: number, method: string, target: string, options: { headers?: Record<string, string>, body?: string } = {}): Promise<RawAnswer> {
  const body = options.body ?? ''
  const headers: Record<string, string> = { host: `127.0.0.1:${port}`, connection: 'close', ...options.headers }
  if (body !== '') headers['content-length'] = String(Buffer.byteLength(body))
  const head = [`${method} ${target} HTTP/1.1`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)].join('\r\n')
  const bytes = await new Promise<Buffer>((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    socket.setTimeout(15_000, () => { socket.destroy(new Error(`no answer to ${method} ${target}`)) })
    socket.on('data', (chunk) => chunks.push(chunk))
    socket.on('end', () => { resolve(Buffer.concat(chunks)) })
    socket.on('error', reject)
    socket.write(`${head}\r\n\r\n${body}`)
  })
  const split = bytes.indexOf('\r\n\r\n')
  const [statusLine = '', ...lines] = bytes.subarray(0, split).toString('latin1').split('\r\n')
  const parsed: Record<string, string> = {}
  for (const line of lines) {
    const colon = line.indexOf(':')
    const name = line.slice(0, colon).trim().toLowerCase()
    const value = line.slice(colon + 1).trim()
    parsed[name] = parsed[name] === undefined ? value : `${parsed[name]}, ${value}`
  }
  let payload = bytes.subarray(split + 4)
  if (parsed['transfer-encoding'] === 'chunked') payload = dechunk(payload)
  const text = payload.toString('utf8')
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: Number(statusLine.split(' ')[1]), headers: parsed, body: text, json }
}

function dechunk (data: Buffer): Buffer {
  const parts: Buffer[] = []
  let at = 0
  for (;;) {
    const eol = data.indexOf('\r\n', at)
    if (eol < 0) break
    const size = Number.parseInt(data.subarray(at, eol).toString('latin1'), 16)
    if (!Number.isFinite(size) || size === 0) break
    parts.push(data.subarray(eol + 2, eol + 2 + size))
    at = eol + 2 + size + 2
  }
  return Buffer.concat(parts)
}
