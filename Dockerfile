# ACS Guardian image: runs the compiled package (dist/, built by `npm run build`).
# docker build -t acs-guardian . && docker run -p 8787:8787 -e GUARDIAN_HMAC_IKM=… -e DATABASE_URL=… acs-guardian
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Install without lifecycle scripts first (cache-friendly layer), then build runtime.wasm and dist/ from the sources.
RUN npm ci --ignore-scripts
COPY . .
RUN npm run build && npm prune --omit=dev --ignore-scripts

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
RUN useradd --system --uid 10001 --home /app guardian && mkdir -p /data && chown guardian /data
# Only what the compiled CLI reads at run time: no sources, no dev dependencies.
COPY --from=build --chown=guardian /app/package.json ./
COPY --from=build --chown=guardian /app/node_modules ./node_modules
COPY --from=build --chown=guardian /app/bin ./bin
COPY --from=build --chown=guardian /app/dist ./dist
COPY --from=build --chown=guardian /app/migrations ./migrations
COPY --from=build --chown=guardian /app/bundles ./bundles
COPY --from=build --chown=guardian /app/rego ./rego
USER guardian
EXPOSE 8787
# Liveness only (the process answers); /readyz also checks the store and the policy engine.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:8787/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
ENTRYPOINT ["node", "bin/guardian.mjs"]
# Migrations are also applied at start-up (under an advisory lock, so replicas can start together).
CMD ["serve", "--host", "0.0.0.0", "--port", "8787", "--data-dir", "/data"]
