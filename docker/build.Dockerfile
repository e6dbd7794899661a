# syncopate-build: compiles the three binaries and the Python package once for the runtime images
# (docker/README.md).
# Each binary's runtime Debian packages, found from its shared libraries, are listed beside it
# in /out, so a runtime image installs exactly what its binary loads. SYNCOPATE_CUDA=ON (on a
# BUILD_BASE with the CUDA toolkit and cuDNN) also builds the trainer's CUDA plugin into /out/lib.
ARG BUILD_BASE=debian:bookworm
FROM ${BUILD_BASE}
ARG SYNCOPATE_CUDA=OFF
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config libgrpc++-dev protobuf-compiler-grpc \
      libprotobuf-dev protobuf-compiler libabsl-dev prometheus-cpp-dev libopenblas-dev zlib1g-dev \
      libxxhash-dev libzip-dev \
      nlohmann-json3-dev libspdlog-dev libcli11-dev python3-dev pybind11-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSYNCOPATE_BUILD_TESTS=OFF \
      -DSYNCOPATE_BUILD_BENCHMARKS=OFF -DSYNCOPATE_CUDA=${SYNCOPATE_CUDA} \
 && cmake --build /build --target syncopate-store syncopate-coordinator syncopate-trainer _syncopate \
 && mkdir -p /out/lib \
 && cp -r /build/python /out/python \
 && docker/runtime-packages.sh /out/python/syncopate/_syncopate*.so > /out/python.packages \
 && if [ -f /build/lib/libsyncopate-cuda.so ]; then \
      cp /build/lib/libsyncopate-cuda.so /out/lib/ && strip /out/lib/libsyncopate-cuda.so; \
    fi \
 && for binary in syncopate-store syncopate-coordinator syncopate-trainer; do \
      cp /build/bin/$binary /out/ && strip /out/$binary \
      && docker/runtime-packages.sh /out/$binary > /out/$binary.packages || exit 1; \
    done
