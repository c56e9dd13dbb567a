import type { FastifyInstance } from 'fastify'
import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { detectImageType, errors, userService, verifyUploadPolicy } from '@esp/domain'
import { binaryFile, errorResponses, multipartForm } from '@esp/http'
import type { ApiContext } from '../../context.js'
import { readMultipartForm } from './multipart.js'

const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp']
const UploadForm = multipartForm(Type.Object({
  key: Type.String({ description: 'the key PATCH /me/avatar gave' }),
  policy: Type.String({ description: 'the signed policy PATCH /me/avatar gave' }),
  signature: Type.String({ description: 'its signature' }),
  acl: Type.Optional(Type.String({ description: 'ignored (public-read)' })),
  success_action_status: Type.Optional(Type.String({ enum: ['200', '201', '204'], default: '200', description: 'the status of the answer' })),
  file: binaryFile('the picture, of the type the key names')
}))
// Plain JSON schemas, not TypeBox: the handlers send bytes and empty answers, which no serializer sees.
const Image = { type: 'string', format: 'binary' }
const Stored = { type: 'null', description: 'stored: an empty answer, with the status success_action_status asked for' }

/**
 * Uploaded pictures under DATA_DIR, and the older form's S3-style upload target: the signed policy
 * from `PATCH /me/avatar` names the user and the key, so no access token is needed here.
 */
export async function uploadRoutes (fastify: FastifyInstance, ctx: ApiContext): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const tags = ['users']

  app.get('/uploads/avatars/:file', {
    schema: {
      tags,
      summary: 'An uploaded picture',
      operationId: 'getUpload',
      params: Type.Object({ file: Type.String({ maxLength: 64, description: 'the file name, as the profile picture URL gives it' }) }),
      response: { 200: { description: 'the picture', content: Object.fromEntries(IMAGE_TYPES.map((type) => [type, { schema: Image }])) }, ...errorResponses(404) }
    }
  }, async (request, reply) => {
    const { bytes, contentType } = await ctx.uploads.read(`avatars/${request.params.file}`)
    return reply
      .type(contentType)
      .header('x-content-type-options', 'nosniff')
      .header('content-security-policy', "default-src 'none'")
      .header('cache-control', 'public, max-age=31536000, immutable')
      .send(bytes)
  })

  app.post('/uploads', {
    schema: {
      tags,
      summary: 'Older form, avatar flow step 2: multipart file, key, policy, signature',
      operationId: 'postUpload',
      body: { content: { 'multipart/form-data': UploadForm } },
      response: { 200: Stored, 201: Stored, 204: Stored, ...errorResponses(400, 403, 413, 422) }
    }
  }, async (request, reply) => {
    if (!request.isMultipart()) throw errors.badRequest('send multipart/form-data with file, key, policy and signature')
    const { fields, file } = await readMultipartForm(request, 'file')
    const policy = verifyUploadPolicy(ctx.settings.uploadSecret, { key: fields.key, policy: fields.policy, signature: fields.signature }, ctx.clock())
    if (file === undefined) throw errors.parameterMissing(['file'])
    if (file.length > policy.maxBytes) throw errors.payloadTooLarge(policy.maxBytes)
    const type = detectImageType(file)
    if (type === null || !policy.key.endsWith(`.${type}`)) throw errors.unprocessable({ file: ['must be an image of the type the key names'] })
    await ctx.uploads.write(policy.key, file)
    await userService.setProfilePicture(ctx.database, policy.userId, policy.key, ctx.clock())
    return reply.code(fields.success_action_status === '201' ? 201 : fields.success_action_status === '204' ? 204 : 200).send()
  })
}
