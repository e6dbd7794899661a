# An example of your own trainer image: Debian's PyTorch with the `syncopate` Python package layered
# on, running examples/pytorch/train.py. Replace train.py with your script (docs/python.md); the
# chart runs it with trainer.custom.image (and .command/.args) and hands it the job through
# SYNCOPATE_* variables. Build docker/build.Dockerfile first (docker/README.md):
#   docker build -f docker/pytorch-trainer.Dockerfile -t my-trainer .
ARG BUILD_IMAGE=syncopate-build:latest
ARG RUNTIME_BASE=debian:bookworm-slim
FROM ${BUILD_IMAGE} AS build

FROM ${RUNTIME_BASE}
COPY --from=build /out/python.packages /tmp/
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3 python3-numpy python3-torch dataset-fashion-mnist $(cat /tmp/python.packages) \
 && rm -rf /var/lib/apt/lists/* /tmp/python.packages \
 && useradd --system --uid 65532 --user-group --no-create-home --shell /usr/sbin/nologin syncopate
COPY --from=build /out/python/syncopate /usr/lib/python3/dist-packages/syncopate
COPY examples/pytorch/train.py /app/train.py
USER 65532:65532
EXPOSE 9100
ENTRYPOINT ["python3", "/app/train.py"]
