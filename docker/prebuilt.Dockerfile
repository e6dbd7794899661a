# syncopate-build from binaries already built on a Debian 12 host: the /out that build.Dockerfile
# compiles, copied in instead (docker/build-images.sh with FROM_BUILD=DIR prepares the context).
ARG BUILD_BASE=debian:bookworm
FROM ${BUILD_BASE}
COPY out/ /out/
