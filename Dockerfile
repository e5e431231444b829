# syntax=docker/dockerfile:1
# Build stage: dev dependencies to compile TypeScript (and a toolchain for better-sqlite3's native addon, built from source where no prebuilt binary can be fetched).
FROM node:20-bookworm-slim AS build
WORKDIR /app
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

# Run stage: compiled JavaScript and production dependencies only, as a non-root user.
FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    STORE_URL=sqlite:///app/data/switchboard.sqlite
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY config/switchboard.example.yaml config/mcp.example.json ./config/
RUN mkdir -p /app/data && chown node:node /app/data
USER node
VOLUME ["/app/data"]
# 3000: Slack HTTP events (when not in Socket Mode); 9464: health and metrics.
EXPOSE 3000 9464
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:9464/healthz').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/main.js", "start"]
