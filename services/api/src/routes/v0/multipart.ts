import type { FastifyRequest } from 'fastify'
import { ApiError, errors } from '@esp/domain'

/**
 * The one mapping of multipart parser failures. @fastify/multipart's own errors carry a status
 * (413 for limits, 400 for a premature close) and pass as they are; busboy's are plain Errors
 * (no boundary, a boundary over 256 characters, a body that ends before its closing boundary),
 * which are the caller's malformed body, not a server failure.
 */
function multipartError (err: unknown): unknown {
  if (err instanceof ApiError) return err
  const status = (err as { statusCode?: unknown } | null)?.statusCode
  if (typeof status === 'number' && status >= 400 && status < 500) return err
  return errors.malformedMultipart()
}

/**
 * Reads a whole multipart form: text fields, and the bytes of the one file field wanted.
 * toBuffer() enforces the size limit (413); other files are drained and ignored.
 */
export async function readMultipartForm (request: FastifyRequest, fileField: string): Promise<{ fields: Record<string, string>, file: Buffer | undefined }> {
  const fields: Record<string, string> = {}
  let file: Buffer | undefined
  try {
    for await (const part of request.parts()) {
      if (part.type === 'file') {
        const bytes = await part.toBuffer()
        if (part.fieldname === fileField) file = bytes
      } else if (typeof part.value === 'string') {
        fields[part.fieldname] = part.value
      }
    }
  } catch (err) {
    throw multipartError(err)
  }
  return { fields, file }
}
