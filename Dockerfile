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
EXPOSE 50051
USER node
ENTRYPOINT ["node", "packages/server/bin/shameless.js", "serve"]
