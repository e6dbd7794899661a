# syncopate-coordinator: the sync coordinator.
# Build docker/build.Dockerfile first (docker/build-images.sh does both); run as user 65532.
ARG BUILD_IMAGE=syncopate-build:latest
ARG RUNTIME_BASE=debian:bookworm-slim
FROM ${BUILD_IMAGE} AS build

FROM ${RUNTIME_BASE}
LABEL org.opencontainers.image.title="syncopate-coordinator" \
      org.opencontainers.image.description="Syncopate: the sync coordinator"
COPY --from=build /out/syncopate-coordinator.packages /tmp/
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      $(cat /tmp/syncopate-coordinator.packages) \
 && rm -rf /var/lib/apt/lists/* /tmp/syncopate-coordinator.packages \
 && useradd --system --uid 65532 --user-group --no-create-home --shell /usr/sbin/nologin syncopate
COPY --from=build /out/syncopate-coordinator /usr/local/bin/
USER 65532:65532
EXPOSE 7000 9100
ENTRYPOINT ["/usr/local/bin/syncopate-coordinator"]
