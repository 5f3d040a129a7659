# Shared by scripts/nemo-venv, automodel-venv and bridge-venv: build a CPU-only venv from a
# requirements file, idempotently (a stamp of the requirements and the calling script).
# Usage (sourced): build_venv VENV REQS SMOKE_PYTHON_CODE [--force]
# NODEPS_REQS=FILE: packages installed after REQS without their dependencies (source that
# tests read but that cannot be imported here, e.g. Megatron-Bridge without TE).

build_venv() {
    local venv="$1" reqs="$2" smoke="$3" force="${4:-}"
    local python="${PYTHON:-python3}" stamp="$venv/.perfgate-stamp"
    local want
    local nodeps="${NODEPS_REQS:-}"
    want="$(cat "$reqs" ${nodeps:+"$nodeps"} "$0" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"
    if [[ "$force" != "--force" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
        # perfgate itself is reinstalled (seconds): its entry points follow pyproject.toml.
        "$venv/bin/uv" pip install --python "$venv/bin/python" --quiet --no-deps -e .
        echo "$(basename "$0"): $venv is up to date"
        return 0
    fi
    local start
    start=$(date +%s)
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install -q uv

    # A CPU build of torch keeps the venv at a few GB instead of pulling the CUDA libraries.
    # Use a local CPU wheel built for the venv's Python where the machine has one (pip's
    # find-links), else PyTorch's CPU index where it answers, else PyPI (the CUDA build:
    # larger, and it imports on CPU all the same).
    local tag torch_src=()
    tag=$("$venv/bin/python" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
    if curl -s -o /dev/null --max-time 10 https://download.pytorch.org/whl/cpu/torch/; then
        torch_src=(--extra-index-url https://download.pytorch.org/whl/cpu
            --index-strategy unsafe-best-match)
    fi
    local dir
    for dir in $(pip config list 2>/dev/null | sed -n "s/.*find-links='\(.*\)'/\1/p") /opt/wheels; do
        if compgen -G "$dir/torch-2.13.0+cpu-$tag-*.whl" >/dev/null; then
            torch_src=(--find-links "$dir")
            break
        fi
    done

    # PYTHONDONTWRITEBYTECODE is set on these machines: compile at install, or every test
    # run pays for compiling thousands of modules.
    "$venv/bin/uv" pip install --python "$venv/bin/python" --compile-bytecode --quiet \
        "${torch_src[@]}" -r "$reqs"
    if [[ -n "$nodeps" ]]; then
        "$venv/bin/uv" pip install --python "$venv/bin/python" --compile-bytecode --quiet \
            --no-deps -r "$nodeps"
    fi
    "$venv/bin/uv" pip install --python "$venv/bin/python" --compile-bytecode --quiet \
        --no-deps -e .
    "$venv/bin/python" -c "$smoke"
    echo "$want" >"$stamp"
    echo "$(basename "$0"): built $venv in $(($(date +%s) - start))s, $(du -sh "$venv" | cut -f1)"
}
