# The Shameless server. Built from the workspace; serves on 0.0.0.0:50051, so it needs protection:
# mount a tokens file (SHAMELESS_TOKENS_FILE) and/or a certificate (SHAMELESS_TLS_CERT,
# SHAMELESS_TLS_KEY), or set SHAMELESS_INSECURE=true; without any it refuses to start, saying so.
# docker-compose.yml runs it with a generated tokens file.
FROM node:20-bookworm-slim
WORKDIR /app
RUN npm install -g pnpm@10.34.9
COPY . .
RUN pnpm install --frozen-lockfile && pnpm --filter @shameless/proto --filter @shameless/server build
ENV SHAMELESS_LISTEN=0.0.0.0:50051
# glibc gives freed memory back to the system: large buffers on their own pages, few arenas
# (docs/limits.md, "Memory after load": RSS after load 157 MiB with these, up to 532 MiB without).
ENV MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=131072 MALLOC_TRIM_THRESHOLD_=131072
EXPOSE 50051
USER node
ENTRYPOINT ["node", "packages/server/bin/shameless.js", "serve"]
