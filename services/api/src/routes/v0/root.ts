import type { FastifyInstance } from 'fastify'
import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { baseUrl, DOCS_PATH, EXPLORER_PATH } from '@esp/http'
import { prefersHtml } from '../../explorer.js'

const Links = Type.Object({
  notice: Type.String(),
  api_documentation_url: Type.String(),
  current_user_url: Type.String(),
  components_url: Type.String({ description: 'older form' }),
  devices_url: Type.String(),
  kits_url: Type.String({ description: 'older form' }),
  measurements_url: Type.String(),
  sensors_url: Type.String(),
  users_url: Type.String(),
  tags_url: Type.String(),
  tags_sensors_url: Type.String(),
  experiments_url: Type.String(),
  search_url: Type.String(),
  version_git: Type.String()
})

/**
 * `GET /v0/`: the links of the newer and the older form, and the build (contract: Root). A browser
 * (HTML first in Accept) is sent to the explorer instead, when this api serves one.
 */
export async function rootRoutes (fastify: FastifyInstance, options: { explorer: boolean }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  app.get('/', {
    schema: {
      tags: ['root'],
      summary: 'Links to every resource',
      description: 'A browser, whose Accept header asks for text/html first, is redirected to the explorer.',
      operationId: 'getRoot',
      response: { 200: Links, 302: Type.Null({ description: 'to the explorer, for a browser' }) }
    }
  }, async (request, reply) => {
    if (options.explorer && prefersHtml(request.headers.accept)) {
      reply.header('vary', 'Accept')
      return await reply.redirect(`${EXPLORER_PATH}/`, 302)
    }
    const base = baseUrl(request)
    const v0 = `${base}/v0`
    reply.header('cache-control', 'max-age=300, public')
    if (options.explorer) reply.header('vary', 'Accept')
    return {
      notice: 'Welcome to the environmental sensing network API, version 0.',
      api_documentation_url: `${base}${DOCS_PATH}`,
      current_user_url: `${v0}/me`,
      components_url: `${v0}/components`,
      devices_url: `${v0}/devices`,
      kits_url: `${v0}/kits`,
      measurements_url: `${v0}/measurements`,
      sensors_url: `${v0}/sensors`,
      users_url: `${v0}/users`,
      tags_url: `${v0}/tags`,
      tags_sensors_url: `${v0}/tag_sensors`,
      experiments_url: `${v0}/experiments`,
      search_url: `${v0}/search`,
      version_git: request.server.httpSettings.versionGit
    }
  })
}
