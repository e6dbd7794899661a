# syncopate-trainer: a trainer (CPU; pass a CUDA runtime base as RUNTIME_BASE for GPUs).
# Build docker/build.Dockerfile first (docker/build-images.sh does both); run as user 65532.
ARG BUILD_IMAGE=syncopate-build:latest
ARG RUNTIME_BASE=debian:bookworm-slim
FROM ${BUILD_IMAGE} AS build

FROM ${RUNTIME_BASE}
LABEL org.opencontainers.image.title="syncopate-trainer" \
      org.opencontainers.image.description="Syncopate: a trainer (CPU; pass a CUDA runtime base as RUNTIME_BASE for GPUs)"
COPY --from=build /out/syncopate-trainer.packages /tmp/
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      $(cat /tmp/syncopate-trainer.packages) dataset-fashion-mnist \
 && rm -rf /var/lib/apt/lists/* /tmp/syncopate-trainer.packages \
 && useradd --system --uid 65532 --user-group --no-create-home --shell /usr/sbin/nologin syncopate
COPY --from=build /out/syncopate-trainer /usr/local/bin/
# The CUDA plugin, where the build made one (empty otherwise); the trainer looks in ../lib.
COPY --from=build /out/lib/ /usr/local/lib/
ENV NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility
USER 65532:65532
EXPOSE 9100
ENTRYPOINT ["/usr/local/bin/syncopate-trainer"]
