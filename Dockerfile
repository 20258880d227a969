# The patchloop worker image (see docker-compose.yml).
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY bin ./bin
# The workflow bundle is built once here: workers load it instead of bundling at every start.
RUN npm ci --no-audit --no-fund && npm run build && node dist/src/cli/cli.js bundle dist/workflows.bundle.js \
  && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production
ENV PATCHLOOP_WORKFLOW_BUNDLE=/app/dist/workflows.bundle.js
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
USER node
# Temporal's runtime turns SIGINT/SIGTERM into a graceful worker shutdown.
CMD ["node", "dist/src/cli/cli.js", "worker"]
