import type { FastifyInstance } from 'fastify'
import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { detectImageType, errors, userService, verifyUploadPolicy } from '@esp/domain'
import { errorResponses } from '@esp/http'
import type { ApiContext } from '../../context.js'
import { readMultipartForm } from './multipart.js'

/**
 * Uploaded pictures under DATA_DIR, and the older form's S3-style upload target: the signed policy
 * from `PATCH /me/avatar` names the user and the key, so no access token is needed here.
 */
export async function uploadRoutes (fastify: FastifyInstance, ctx: ApiContext): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const tags = ['users']

  app.get('/uploads/avatars/:file', {
    schema: { tags, summary: 'An uploaded picture', operationId: 'getUpload', params: Type.Object({ file: Type.String({ maxLength: 64 }) }), response: { ...errorResponses(404) } }
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
    schema: { tags, summary: 'Older form, avatar flow step 2: multipart file, key, policy, signature', operationId: 'postUpload', consumes: ['multipart/form-data'], response: { ...errorResponses(400, 403, 413, 422) } }
  }, async (request, reply) => {
    if (!request.isMultipart()) throw errors.badRequest('send multipart/form-data with file, key, policy and signature')
    const { fields, file } = await readMultipartForm(request, 'file')
    const policy = verifyUploadPolicy(ctx.settings.uploadSecret, { key: fields.key, policy: fields.policy, signature: fields.signature }, ctx.clock())
    if (file === undefined) throw errors.parameterMissing(['file'])
    if (file.length > policy.maxBytes) throw errors.payloadTooLarge(policy.maxBytes)
    const type = detectImageType(file)
    if (type === null || !policy.key.endsWith(`.${type}`)) throw errors.unprocessable({ file: ['must be an image of the type the key names'] })
    await ctx.uploads.write(policy.key, file)
    await userService.setProfilePicture(ctx.database.db, policy.userId, policy.key, ctx.clock())
    return reply.code(fields.success_action_status === '201' ? 201 : fields.success_action_status === '204' ? 204 : 200).send()
  })
}
