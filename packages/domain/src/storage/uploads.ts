import { createHmac, randomUUID } from 'node:crypto'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { errors } from '../errors.js'
import { safeEqual } from '../auth/secrets.js'

export type ImageType = 'png' | 'jpeg' | 'gif' | 'webp'
export const IMAGE_CONTENT_TYPES: Record<ImageType, string> = { png: 'image/png', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp' }

/** The file's own bytes decide what it is: a declared content type is only a claim. */
export function detectImageType (bytes: Buffer): ImageType | null {
  if (bytes.length >= 8 && bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'png'
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'jpeg'
  if (bytes.length >= 6 && /^GIF8[79]a$/.test(bytes.subarray(0, 6).toString('latin1'))) return 'gif'
  if (bytes.length >= 12 && bytes.subarray(0, 4).toString('latin1') === 'RIFF' && bytes.subarray(8, 12).toString('latin1') === 'WEBP') return 'webp'
  return null
}

const KEY = /^avatars\/[0-9a-f-]{36}\.(png|jpeg|gif|webp)$/

export class UploadStore {
  constructor (private readonly root: string) {}

  /** Stores an image under a fresh key; anything that is not an image is refused. */
  async saveImage (bytes: Buffer): Promise<string> {
    const type = detectImageType(bytes)
    if (type === null) throw errors.unprocessable({ profile_picture: ['must be a PNG, JPEG, GIF or WebP image'] })
    const key = `avatars/${randomUUID()}.${type}`
    await this.write(key, bytes)
    return key
  }

  async write (key: string, bytes: Buffer): Promise<void> {
    if (!KEY.test(key)) throw errors.badRequest('invalid upload key', { key: ['is invalid'] })
    const file = path.join(this.root, key)
    await mkdir(path.dirname(file), { recursive: true })
    await writeFile(file, bytes)
  }

  /** Bytes and content type of a stored upload; keys come from URLs, so they are checked first. */
  async read (key: string): Promise<{ bytes: Buffer, contentType: string }> {
    if (!KEY.test(key)) throw errors.notFound('Upload', key)
    try {
      const bytes = await readFile(path.join(this.root, key))
      const type = key.slice(key.lastIndexOf('.') + 1) as ImageType
      return { bytes, contentType: IMAGE_CONTENT_TYPES[type] }
    } catch {
      throw errors.notFound('Upload', key)
    }
  }
}

export interface UploadPolicy { userId: number, key: string, expiresAt: string, maxBytes: number }

/**
 * The older form's avatar flow signs an S3-style POST policy (contract: PATCH /me/avatar). This
 * platform serves the upload URL itself and checks the same signature, expiry and size.
 */
export function signUploadPolicy (secret: string, policy: UploadPolicy): { policy: string, signature: string } {
  const encoded = Buffer.from(JSON.stringify({
    expiration: policy.expiresAt,
    conditions: [{ key: policy.key }, { acl: 'public-read' }, { success_action_status: '200' }, ['content-length-range', 0, policy.maxBytes], { 'x-user-id': String(policy.userId) }]
  })).toString('base64')
  return { policy: encoded, signature: createHmac('sha256', secret).update(encoded).digest('base64') }
}

export function verifyUploadPolicy (secret: string, fields: { policy?: string | undefined, signature?: string | undefined, key?: string | undefined }, now: Date): UploadPolicy {
  const { policy, signature, key } = fields
  if (policy === undefined || signature === undefined || key === undefined) throw errors.parameterMissing(['key', 'policy', 'signature'].filter((k) => fields[k as keyof typeof fields] === undefined))
  const expected = createHmac('sha256', secret).update(policy).digest('base64')
  if (!safeEqual(expected, signature)) throw errors.forbidden()
  let parsed: { expiration?: unknown, conditions?: unknown[] }
  try {
    parsed = JSON.parse(Buffer.from(policy, 'base64').toString('utf8')) as typeof parsed
  } catch {
    throw errors.forbidden()
  }
  const conditions = Array.isArray(parsed.conditions) ? parsed.conditions : []
  const find = (name: string): unknown => conditions.find((c): c is Record<string, unknown> => typeof c === 'object' && c !== null && !Array.isArray(c) && name in c)?.[name]
  const range = conditions.find((c): c is unknown[] => Array.isArray(c) && c[0] === 'content-length-range')
  const expiresAt = typeof parsed.expiration === 'string' ? parsed.expiration : ''
  if (!(Date.parse(expiresAt) > now.getTime())) throw errors.forbidden()
  if (find('key') !== key) throw errors.forbidden()
  return { userId: Number(find('x-user-id')), key, expiresAt, maxBytes: Number(range?.[2] ?? 0) }
}
