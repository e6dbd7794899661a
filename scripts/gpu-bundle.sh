#!/usr/bin/env bash
# Packs what the GPU checks need into one folder that runs on a GPU machine without this project's
# build dependencies: the binaries, the CUDA plugin, the gpu tests (and compute_test, which loads
# the plugin), the Debian 12 shared libraries they load (xz-compressed), Fashion-MNIST, and run.sh
# (scripts/gpu-bundle-run.sh), which runs the tests and the CNN benchmark there. CUDA's own
# libraries (libcudart 13, cuBLAS 13, cuDNN 9) are not packed: run.sh finds the GPU machine's.
#   scripts/gpu-bundle.sh [DIR]        (default .gpu-bundle, which git ignores; about 45 MB)
# then, on the GPU machine, from a checkout of the same commit:  DIR/run.sh [LOG_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=${1:-.gpu-bundle}
build=build
if [[ ! -f $build/lib/libsyncopate-cuda.so ]]; then
  echo "no CUDA plugin in $build/lib: build where the CUDA toolkit and cuDNN are (./scripts/build.sh)" >&2
  exit 1
fi
binaries=(bin/syncopate bin/syncopate-trainer bin/syncopate-store bin/syncopate-coordinator
          bin/syncopate-cnn-throughput)
tests=(services/compute/compute_test services/compute/cuda_backend_test tests/gpu_e2e_test)

rm -rf "$bundle"
mkdir -p "$bundle"/{bin,lib,tests,data,debian-lib}
for file in "${binaries[@]}"; do strip -o "$bundle/bin/${file##*/}" "$build/$file"; done
for file in "${tests[@]}"; do strip -o "$bundle/tests/${file##*/}" "$build/$file"; done
strip -o "$bundle/lib/libsyncopate-cuda.so" "$build/lib/libsyncopate-cuda.so"

# Every shared library they load but the C and C++ runtimes (a GPU machine's are as new or newer)
# and CUDA's (the GPU machine's must match its driver).
ldd "$bundle"/bin/* "$bundle"/tests/* "$bundle"/lib/*.so | awk '/=> \// { print $3 }' | sort -u |
  grep -Ev '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt)\.so|/ld-linux|/libcu(dart|blas|blasLt|dnn)[.]so' |
  xargs cp -L -t "$bundle/debian-lib"
tar -cJf "$bundle/debian-lib.tar.xz" -C "$bundle" debian-lib
rm -r "$bundle/debian-lib"

cp /usr/share/datasets/fashion-mnist/*-ubyte.gz "$bundle/data/"
cp scripts/gpu-bundle-run.sh "$bundle/run.sh"
echo "$(git rev-parse --short HEAD)" > "$bundle/commit"
du -sh "$bundle"
