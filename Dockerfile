# Kura: the kurad daemon and the kura CLI in a small, non-root image.
#
# Build (BuildKit, the default builder of current Docker):
#   docker build --build-arg VERSION="$(git describe --tags --always --dirty)" -t kura .
# or with podman (or buildah bud); the docker format keeps the HEALTHCHECK,
# which the OCI image format has no field for:
#   podman build --format docker --build-arg VERSION=... -t kura .
# Cross-build, e.g. for a Raspberry Pi:
#   docker buildx build --platform linux/arm64 --build-arg VERSION=... -t kura:arm64 .
#
# Run:
#   docker run -d --name kura --network host --stop-timeout 30 -v kura-data:/data kura
#
# kurad listens on 127.0.0.1 inside the container by default. Without tokens,
# Kura accepts anonymous admin requests and kurad refuses to listen on a
# non-loopback address, so the default is loopback. With --network host (Linux)
# the API is then reachable at http://127.0.0.1:7700 on the host only. The CLI
# also works inside the container: docker exec kura kura health
#
# To expose the API beyond loopback, first configure tokens (a tokens file in
# the volume), then listen on all interfaces and publish the port, e.g.:
#   docker run -d --name kura -v kura-data:/data \
#     -e KURA_TOKENS_FILE=/data/tokens -e KURA_HTTP_ADDR=0.0.0.0:7700 \
#     -p 127.0.0.1:7700:7700 kura
#
# State (kura.db, the signing key kurad.key, kurad.addr) lives in the /data
# volume: back it up as a whole. A bind mount must be writable by uid 65532.
# kurad locks the directory (kurad.lock): two containers on one volume
# cannot both run kurad; the second exits at once, naming the first.
# --stop-timeout 30 leaves kurad time for its graceful shutdown
# (KURA_SHUTDOWN_TIMEOUT, 15s) before Docker's SIGKILL; Docker waits 10s
# by default.
#
# Base images are named in full (registry/repository:tag), so that podman
# and buildah, which do not assume docker.io, pull the same images Docker
# does, and pinned by digest, so that a build next month uses the same
# bases as today's (the tag says what the image is; the digest decides).
# The digests are those of the multi-platform indexes, so --platform still
# picks each platform's image. To move to newer bases, look the digests up
# and replace them here (a test checks that every FROM stays fully named
# and pinned):
#   docker buildx imagetools inspect docker.io/library/golang:1.26-bookworm
#   docker buildx imagetools inspect gcr.io/distroless/static-debian12:nonroot
# (the "Digest:" line; or: skopeo inspect --raw docker://IMAGE | sha256sum,
# or crane digest IMAGE). Keep the golang tag's Go version at least the
# go.mod's.

FROM --platform=$BUILDPLATFORM docker.io/library/golang:1.26-bookworm@sha256:d9c68c2c51161e12fd77e4c6320687c9cd86e1af1e3ad6e6cd63ff970641453c AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
WORKDIR /src

# Dependencies first, so that they stay cached while the source changes.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download

COPY . .
# CGO off: both binaries are static and run on distroless/static.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    export CGO_ENABLED=0 GOOS="$TARGETOS" GOARCH="$TARGETARCH" && \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/kurad ./cmd/kurad && \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/kura ./cmd/kura && \
    mkdir -p /out/rootfs && mkdir -m 0700 /out/rootfs/data

FROM gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab
ARG VERSION=dev
LABEL org.opencontainers.image.title="kura" \
      org.opencontainers.image.description="Kura: agent memory you can verify (kurad daemon and kura CLI)" \
      org.opencontainers.image.version="${VERSION}"

COPY --from=build /out/kurad /out/kura /usr/local/bin/
# An empty /data owned by the nonroot user, mode 0700: a new named volume
# takes this ownership and mode, so kurad can write there without root and
# nobody else can look in. kurad creates its files 0600. The COPY names the
# directory that holds data, not data itself: a COPY of a directory copies
# what is in it, and makes the destination with a mode of its own (BuildKit
# takes the source's, buildah and podman 0755), while an entry inside keeps
# its mode under both. The distroless runtime has no shell to chmod.
COPY --from=build --chown=65532:65532 /out/rootfs/ /

# KURA_HTTP_ADDR stays on loopback until tokens are configured (see above).
# The CLI (and so the health check) reads KURA_URL, default
# http://127.0.0.1:7700: set it too if you change the HTTP port.
ENV KURA_DATA_DIR=/data \
    KURA_HTTP_ADDR=127.0.0.1:7700 \
    KURA_NATS_ADDR=127.0.0.1:4222

USER 65532:65532
VOLUME ["/data"]
EXPOSE 7700 4222

# `kura health` exits 0 when kurad's /healthz answers 200.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["/usr/local/bin/kura", "health"]

ENTRYPOINT ["/usr/local/bin/kurad"]
