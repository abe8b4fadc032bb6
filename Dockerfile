# The Shameless server. Built from the workspace; serves on 0.0.0.0:50051.
FROM node:20-bookworm-slim
WORKDIR /app
RUN npm install -g pnpm@10.34.9
COPY . .
RUN pnpm install --frozen-lockfile && pnpm --filter @shameless/proto --filter @shameless/server build
ENV SHAMELESS_LISTEN=0.0.0.0:50051
EXPOSE 50051
USER node
ENTRYPOINT ["node", "packages/server/bin/shameless.js", "serve"]
