# syntax=docker/dockerfile:1.7
# Notify's images, one target per service, all from this file:
#   docker build --target gateway      -t notify-gateway .
#   docker build --target auth-svc     -t notify-auth-svc .
#   docker build --target dispatch-svc -t notify-dispatch-svc .
#   docker build --target mailer-svc   -t notify-mailer-svc .
#   docker build --target webhook-svc  -t notify-webhook-svc .
#   docker build --target bounce-svc   -t notify-bounce-svc .
#   docker build --target toolbox      -t notify-toolbox .     # schema migration (default command), notifyctl, helm test
# Node runs the TypeScript sources directly (type stripping), so the images ship the sources and no build output.
# Each image holds only its service's workspaces and production dependencies, owned by root and read-only to the
# service's user (uid 1000); nothing is written at run time outside /tmp. Node is PID 1 and gets SIGTERM itself:
# every service drains in order on it (platform/src/service.ts).
ARG NODE_IMAGE=node:24.21.0-slim

# ---- Dependencies ---------------------------------------------------------------------------------------------------
# The lockfile and every workspace manifest (npm ci checks them all), nothing else: source edits keep this layer cached.
FROM ${NODE_IMAGE} AS manifests
WORKDIR /app
COPY package.json package-lock.json ./
COPY proto/package.json proto/
COPY platform/package.json platform/
COPY templating/package.json templating/
COPY gateway/package.json gateway/
COPY auth-svc/package.json auth-svc/
COPY dispatch-svc/package.json dispatch-svc/
COPY mailer-svc/package.json mailer-svc/
COPY webhook-svc/package.json webhook-svc/
COPY bounce-svc/package.json bounce-svc/
COPY cli/package.json cli/
COPY test/package.json test/
ENV NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_FUND=false NPM_CONFIG_AUDIT=false

# One production install per image: the workspace, the workspaces it links (@notify/platform, @notify/proto) and their
# dependencies; no devDependencies, no root dependencies (the `node` devDependency included), no install scripts.
FROM manifests AS deps-gateway
RUN --mount=type=cache,target=/root/.npm,sharing=locked \
    npm ci --omit=dev --workspace gateway --include-workspace-root=false --ignore-scripts

FROM manifests AS deps-auth-svc
RUN --mount=type=cache,target=/root/.npm,sharing=locked \
    npm ci --omit=dev --workspace auth-svc --include-workspace-root=false --ignore-scripts

FROM manifests AS deps-dispatch-svc
RUN --mount=type=cache,target=/root/.npm,sharing=locked \
    npm ci --omit=dev --workspace dispatch-svc --include-workspace-root=false --ignore-scripts

FROM manifests AS deps-mailer-svc
RUN --mount=type=cache,target=/root/.npm,sharing=locked \
    npm ci --omit=dev --workspace mailer-svc --include-workspace-root=false --ignore-scripts

FROM manifests AS deps-webhook-svc
RUN --mount=type=cache,target=/root/.npm,sharing=locked \
    npm ci --omit=dev --workspace webhook-svc --include-workspace-root=false --ignore-scripts

FROM manifests AS deps-bounce-svc
RUN --mount=type=cache,target=/root/.npm,sharing=locked \
    npm ci --omit=dev --workspace bounce-svc --include-workspace-root=false --ignore-scripts

FROM manifests AS deps-toolbox
RUN --mount=type=cache,target=/root/.npm,sharing=locked \
    npm ci --omit=dev --workspace cli --include-workspace-root=false --ignore-scripts

# ---- Runtime base ---------------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
# A running service needs node only: npm, npx, corepack and yarn would just widen what an intruder finds.
RUN rm -rf /usr/local/lib/node_modules /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack \
           /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-*
ENV NODE_ENV=production TMPDIR=/tmp HOME=/tmp
WORKDIR /app
COPY package.json ./
# The platform and the gRPC contracts every image runs on (sources and .proto files read at start).
COPY proto/ proto/
COPY platform/ platform/
LABEL org.opencontainers.image.title="Notify" \
      org.opencontainers.image.description="Template-based email notifications over one HTTP endpoint" \
      org.opencontainers.image.licenses="Apache-2.0"
# Numeric, so the kubelet can verify runAsNonRoot without a passwd lookup.
USER 1000:1000

# ---- Services -------------------------------------------------------------------------------------------------------
FROM runtime AS gateway
# node_modules of the root and of any workspace that needs its own versions (plus the manifests npm ci read).
COPY --from=deps-gateway /app/ ./
COPY gateway/ gateway/
EXPOSE 8080 9464
CMD ["node", "--import", "@notify/platform/telemetry-register", "gateway/src/main.ts"]

FROM runtime AS auth-svc
# node_modules of the root and of any workspace that needs its own versions (plus the manifests npm ci read).
COPY --from=deps-auth-svc /app/ ./
COPY auth-svc/ auth-svc/
EXPOSE 50051 9464
CMD ["node", "--import", "@notify/platform/telemetry-register", "auth-svc/src/main.ts"]

FROM runtime AS dispatch-svc
# node_modules of the root and of any workspace that needs its own versions (plus the manifests npm ci read).
COPY --from=deps-dispatch-svc /app/ ./
# Template checks and the web panel's previews use the renderer mailers send with.
COPY templating/ templating/
COPY dispatch-svc/ dispatch-svc/
EXPOSE 50052 9464
CMD ["node", "--import", "@notify/platform/telemetry-register", "dispatch-svc/src/main.ts"]

FROM runtime AS mailer-svc
# node_modules of the root and of any workspace that needs its own versions (plus the manifests npm ci read).
COPY --from=deps-mailer-svc /app/ ./
COPY templating/ templating/
COPY mailer-svc/ mailer-svc/
EXPOSE 9464
CMD ["node", "--import", "@notify/platform/telemetry-register", "mailer-svc/src/main.ts"]

FROM runtime AS webhook-svc
# node_modules of the root and of any workspace that needs its own versions (plus the manifests npm ci read).
COPY --from=deps-webhook-svc /app/ ./
COPY webhook-svc/ webhook-svc/
EXPOSE 9464
CMD ["node", "--import", "@notify/platform/telemetry-register", "webhook-svc/src/main.ts"]

FROM runtime AS bounce-svc
# node_modules of the root and of any workspace that needs its own versions (plus the manifests npm ci read).
COPY --from=deps-bounce-svc /app/ ./
COPY bounce-svc/ bounce-svc/
# SMTP for reports (BOUNCE_SMTP_PORT; an unprivileged port, the Service maps 25 to it) and the ops listener.
EXPOSE 2526 9464
CMD ["node", "--import", "@notify/platform/telemetry-register", "bounce-svc/src/main.ts"]

# Schema migration (the chart's hook Job runs the default command), notifyctl and the `helm test` smoke test.
FROM runtime AS toolbox
# node_modules of the root and of any workspace that needs its own versions (plus the manifests npm ci read).
COPY --from=deps-toolbox /app/ ./
COPY cli/ cli/
USER root
RUN ln -s /app/cli/src/main.ts /usr/local/bin/notifyctl
USER 1000:1000
CMD ["node", "platform/src/database/migrate-cli.ts"]
