import type { FastifyInstance } from 'fastify'
import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { detectImageType, errors, OkMessage, signUploadPolicy, UserBody, userService, userBody } from '@esp/domain'
import { baseUrl, binaryFile, errorResponses, multipartForm, requireViewer, SIGNED_IN } from '@esp/http'
import type { ApiContext } from '../../context.js'
import { readKept, sendKept } from './kept.js'
import { readMultipartForm } from './multipart.js'
import { renderUser } from './user-view.js'

const USER_FIELDS = ['email', 'username', 'password', 'city', 'country_code', 'url', 'first_name', 'last_name'] as const
const MultipartUpdate = multipartForm(Type.Object({
  ...Object.fromEntries(USER_FIELDS.map((field) => [field, Type.Optional(Type.String())])),
  profile_picture: Type.Optional(binaryFile('the new picture: PNG, JPEG, GIF or WebP'))
}))

/** Contract: `GET|PATCH|PUT|DELETE /me` and the older form's `PATCH /me/avatar`. */
export async function meRoutes (fastify: FastifyInstance, ctx: ApiContext): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const tags = ['users']

  app.get('/me', {
    // A kept read: remembered credentials are checked by its own statement (kept.ts readKept).
    config: { credentialsCheckedByRead: true },
    schema: { tags, summary: 'The current user, with their devices', operationId: 'getMe', security: SIGNED_IN, response: { 200: Type.Ref('User'), ...errorResponses(401, 429) } }
  }, async (request, reply) => {
    const viewer = requireViewer(request)
    return sendKept(reply, await readKept(ctx, request, async (caller) => await userBody(request.reads.database, caller.viewer?.id ?? viewer.id, caller)))
  })

  for (const method of ['PATCH', 'PUT'] as const) {
    app.route({
      method,
      url: '/me',
      schema: {
        tags,
        summary: 'Update the current user; multipart with a `profile_picture` image changes the picture',
        operationId: method === 'PATCH' ? 'updateMe' : 'replaceMe',
        security: SIGNED_IN,
        body: {
          content: {
            'application/json': { schema: UserBody },
            'application/x-www-form-urlencoded': { schema: UserBody },
            'multipart/form-data': MultipartUpdate
          }
        },
        response: { 200: Type.Ref('User'), ...errorResponses(400, 401, 413, 422, 429) }
      },
      handler: async (request) => {
        const viewer = requireViewer(request)
        let input: Record<string, string | null | undefined> = {}
        let picture: Buffer | undefined
        if (request.isMultipart()) {
          const update = await readMultipartForm(request, 'profile_picture')
          picture = update.file
          for (const key of USER_FIELDS) if (update.fields[key] !== undefined) input[key] = update.fields[key]
        } else {
          input = (request.body ?? {}) as Record<string, string | null | undefined>
        }
        // Check the picture before anything is written, so a bad file changes nothing.
        if (picture !== undefined && detectImageType(picture) === null) {
          throw errors.unprocessable({ profile_picture: ['must be a PNG, JPEG, GIF or WebP image'] })
        }
        const target = await userService.findUser(ctx.database, viewer.id)
        let row = await userService.updateUser(ctx.database, target, input as never, viewer, ctx.clock)
        if (picture !== undefined) {
          const key = await ctx.uploads.saveImage(picture)
          row = await userService.setProfilePicture(ctx.database, viewer.id, key, ctx.clock())
        }
        return await renderUser(ctx, request, row)
      }
    })
  }

  app.delete('/me', {
    schema: { tags, summary: 'Delete (archive) the current user and their devices', operationId: 'deleteMe', security: SIGNED_IN, response: { 200: OkMessage, ...errorResponses(401, 429) } }
  }, async (request) => {
    const viewer = requireViewer(request)
    const target = await userService.findUser(ctx.database, viewer.id)
    await userService.archiveUser(ctx.database, target, viewer, ctx.clock)
    return { message: 'OK' }
  })

  const AvatarPolicy = Type.Object({ key: Type.String(), policy: Type.String(), signature: Type.String(), upload_url: Type.String(), acl: Type.String(), success_action_status: Type.String() })
  for (const method of ['PATCH', 'POST'] as const) {
    app.route({
      method,
      url: '/me/avatar',
      schema: {
        tags,
        summary: 'Older form: a signed policy to upload an avatar to upload_url (multipart: file, key, policy, signature, acl, success_action_status)',
        operationId: method === 'PATCH' ? 'avatarPolicy' : 'avatarPolicyPost',
        security: SIGNED_IN,
        body: Type.Optional(Type.Object({ filename: Type.Optional(Type.String({ maxLength: 255 })) })),
        response: { 200: AvatarPolicy, ...errorResponses(401, 422, 429) }
      },
      handler: async (request) => {
        const viewer = requireViewer(request)
        const filename = request.body?.filename ?? 'avatar'
        const extension = /\.(png|jpe?g|gif|webp)$/i.exec(filename)?.[1]?.toLowerCase().replace('jpg', 'jpeg') ?? 'png'
        const key = `avatars/${crypto.randomUUID()}.${extension}`
        const expiresAt = new Date(ctx.clock().getTime() + 3600 * 1000).toISOString()
        const signed = signUploadPolicy(ctx.settings.uploadSecret, { userId: viewer.id, key, expiresAt, maxBytes: ctx.settings.uploadMaxBytes })
        return { key, ...signed, upload_url: `${baseUrl(request)}/v0/uploads`, acl: 'public-read', success_action_status: '200' }
      }
    })
  }
}
