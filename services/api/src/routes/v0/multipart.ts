import type { FastifyRequest } from 'fastify'

/**
 * Reads a whole multipart form: text fields, and the bytes of the one file field wanted.
 * toBuffer() enforces the size limit (413); other files are drained and ignored.
 */
export async function readMultipartForm (request: FastifyRequest, fileField: string): Promise<{ fields: Record<string, string>, file: Buffer | undefined }> {
  const fields: Record<string, string> = {}
  let file: Buffer | undefined
  for await (const part of request.parts()) {
    if (part.type === 'file') {
      const bytes = await part.toBuffer()
      if (part.fieldname === fileField) file = bytes
    } else if (typeof part.value === 'string') {
      fields[part.fieldname] = part.value
    }
  }
  return { fields, file }
}
