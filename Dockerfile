# syntax=docker/dockerfile:1
# One image for the controller and the sidecar: `leviath controller`, `leviath sidecar` (entrypoint `leviath`).
#   docker build -t ghcr.io/leviath/leviath-operator:0.1.0 .
# The reference agent runtime is the same image with entrypoint `leviath agent` (target `agent`):
#   docker build --target agent -t ghcr.io/leviath/leviath-agent:0.1.0 .
# Runs as the numeric non-root user 65532 on a read-only root filesystem (it writes only under /tmp, which
# the chart and the operator's pods mount as an emptyDir).
ARG NODE_IMAGE=node:24-bookworm-slim

# Compile TypeScript to dist/ (tsc, from the locked devDependencies).
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# Production dependencies only, with native modules built for this Node.
FROM ${NODE_IMAGE} AS deps
WORKDIR /src
# re2 is a native module: node-gyp needs a compiler and Python when no prebuilt binary fits.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund \
 && npm cache clean --force

FROM ${NODE_IMAGE} AS operator
LABEL org.opencontainers.image.title="leviath-operator" \
      org.opencontainers.image.description="Leviath operator: controller and sidecar (entrypoint leviath)" \
      org.opencontainers.image.source="https://github.com/GEMISIS/leviath" \
      org.opencontainers.image.licenses="Apache-2.0"
# Nothing at run time installs packages: drop npm and corepack from the final image.
RUN rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack \
           /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack
WORKDIR /app
COPY --from=deps /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY package.json ./
# bin/leviath runs dist/main.js when there is no src/ (as here).
COPY bin ./bin
# V8's code cache of the CLI's modules, written by this image's Node as its user (Node keys the cache by both), read
# by bin/leviath, root's and read-only at run time (scripts/compile-cache.mjs; a cold sidecar starts with less CPU).
COPY scripts/compile-cache.mjs /tmp/compile-cache.mjs
RUN install -d -o 65532 -g 65532 /app/.compile-cache
USER 65532:65532
RUN node /tmp/compile-cache.mjs /app
USER 0:0
RUN chown -R 0:0 /app/.compile-cache && rm /tmp/compile-cache.mjs
ENV NODE_ENV=production \
    PATH=/app/bin:$PATH \
    HOME=/tmp
# Numeric, so Pod Security `restricted` (runAsNonRoot) can verify it without a passwd lookup.
USER 65532:65532
ENTRYPOINT ["leviath"]
CMD ["--help"]

# The engine pod's agent container: the reference runtime (docs/runtime.md). No WORKDIR: the pod sets the workspace.
FROM operator AS agent
LABEL org.opencontainers.image.title="leviath-agent" \
      org.opencontainers.image.description="Leviath's reference agent runtime (leviath agent)"
WORKDIR /
ENTRYPOINT ["leviath", "agent"]
CMD []

# The default target (a plain `docker build .`): the operator image.
FROM operator
