# syntax=docker/dockerfile:1
# One image for the three services; the command picks one (infra/compose.yaml, docs/deployment.md):
#   node services/api/dist/main.js | services/ingest/dist/main.js | services/exporter/dist/main.js
# Plain node at run time: TypeScript is compiled in the build stage (tsc -b over project references).
ARG NODE_IMAGE=node:20.20.2-bookworm-slim
ARG PNPM_VERSION=10.34.8

FROM ${NODE_IMAGE} AS base
ARG PNPM_VERSION
RUN npm install -g pnpm@${PNPM_VERSION} && npm cache clean --force
WORKDIR /app
# Only the manifests first, so the dependency layers are reused while the sources change.
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml .npmrc ./
# the pnpm patches (pnpm-workspace.yaml) are part of the install
COPY patches patches
COPY packages/config/package.json packages/config/
COPY packages/db/package.json packages/db/
COPY packages/jobs/package.json packages/jobs/
COPY packages/domain/package.json packages/domain/
COPY packages/http/package.json packages/http/
COPY packages/explorer/package.json packages/explorer/
COPY services/api/package.json services/api/
COPY services/ingest/package.json services/ingest/
COPY services/exporter/package.json services/exporter/

FROM base AS build
RUN pnpm install --frozen-lockfile
COPY tsconfig.base.json tsconfig.build.json ./
COPY packages packages
COPY services services
# the explorer's Vite build runs from here
COPY scripts/build-explorer.ts scripts/
RUN pnpm build

FROM base AS runtime
# version_git of GET /v0/ (there is no git in the image): docker build --build-arg VERSION_GIT=$(git describe --always)
ARG VERSION_GIT=""
ENV NODE_ENV=production HOST=0.0.0.0 MQTT_HOST=0.0.0.0 DATA_DIR=/data VERSION_GIT=${VERSION_GIT}
RUN pnpm install --frozen-lockfile --prod && pnpm store prune
# Compiled code and what it reads at run time: the SQL migrations (every service migrates at start,
# under an advisory lock) and the root package.json (version_git fallback).
COPY db/migrations db/migrations
COPY --from=build /app/packages/config/dist packages/config/dist
COPY --from=build /app/packages/db/dist packages/db/dist
COPY --from=build /app/packages/jobs/dist packages/jobs/dist
COPY --from=build /app/packages/domain/dist packages/domain/dist
COPY --from=build /app/packages/http/dist packages/http/dist
# the explorer: the node side (where the build is) and the built web app the api serves
COPY --from=build /app/packages/explorer/dist-node packages/explorer/dist-node
COPY --from=build /app/packages/explorer/dist packages/explorer/dist
COPY --from=build /app/services/api/dist services/api/dist
COPY --from=build /app/services/ingest/dist services/ingest/dist
COPY --from=build /app/services/exporter/dist services/exporter/dist
# DATA_DIR: uploads, CSV archives, the generated JWT secret and the mail outbox. A named volume
# mounted here starts out owned by the unprivileged user.
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 3000 1883
# SIGTERM reaches node directly (exec form, no shell): the service drains and exits 0.
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "services/api/dist/main.js"]
