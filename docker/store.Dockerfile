# syncopate-store: one shard of the parameter store.
# Build docker/build.Dockerfile first (docker/build-images.sh does both); run as user 65532.
ARG BUILD_IMAGE=syncopate-build:latest
ARG RUNTIME_BASE=debian:bookworm-slim
FROM ${BUILD_IMAGE} AS build

FROM ${RUNTIME_BASE}
LABEL org.opencontainers.image.title="syncopate-store" \
      org.opencontainers.image.description="Syncopate: one shard of the parameter store"
COPY --from=build /out/syncopate-store.packages /tmp/
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      $(cat /tmp/syncopate-store.packages) \
 && rm -rf /var/lib/apt/lists/* /tmp/syncopate-store.packages \
 && useradd --system --uid 65532 --user-group --no-create-home --shell /usr/sbin/nologin syncopate
COPY --from=build /out/syncopate-store /usr/local/bin/
RUN mkdir -p /var/lib/syncopate && chown 65532:65532 /var/lib/syncopate
VOLUME /var/lib/syncopate
USER 65532:65532
EXPOSE 7070 9100
ENTRYPOINT ["/usr/local/bin/syncopate-store"]
