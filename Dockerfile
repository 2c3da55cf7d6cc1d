# syntax=docker/dockerfile:1
# Sigil as a container image (docs/deployment.md): docker build -t sigil .
# Run it with your config mounted at /etc/sigil/sigil.json; the SQLite store lives in the volume
# /var/lib/sigil unless SIGIL_STORAGE names PostgreSQL. test/e2e/dockerfile.test.ts runs the RUN and
# COPY steps below in a temporary folder and starts the result, so keep to one command per RUN
# step's purpose and to plain paths (no globs, no shell tricks the test would have to imitate).

# 1. The `sigil` command: dist/cli/main.js, one file with its pure-JavaScript imports inlined
#    (scripts/bundle-cli.mjs; needs esbuild, a dev dependency). --ignore-scripts: the package's
#    own `prepare` would run the whole build before the sources are copied.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts/bundle-cli.mjs ./scripts/
COPY src ./src
RUN node scripts/bundle-cli.mjs

# 2. Production dependencies only: the packages the bundle leaves outside (native code and
#    libraries loaded on first use). better-sqlite3 is the one with an install script, which
#    fetches its prebuilt binary for this platform.
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund
RUN npm rebuild better-sqlite3

# 3. The image: Node.js 20, the bundle and the production dependencies, run as the image's
#    unprivileged `node` user.
FROM node:20-bookworm-slim
ENV NODE_ENV=production
ENV PORT=5000
# Every interface of the container, where a published port arrives (Sigil's own default is 127.0.0.1).
ENV HOST=0.0.0.0
ENV SIGIL_CONFIG=/etc/sigil/sigil.json
ENV SIGIL_STORAGE=sqlite:/var/lib/sigil/sigil.db
WORKDIR /app
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist/cli ./dist/cli
RUN install -d -o node -g node -m 0700 /var/lib/sigil
USER node
VOLUME ["/var/lib/sigil"]
EXPOSE 5000
# Liveness from Node.js itself (the slim image has no curl): GET /healthz on the public port.
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.PORT + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/cli/main.js", "start"]
