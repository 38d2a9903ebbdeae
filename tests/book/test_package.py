"""Tests of what importing the package does before JAX starts."""

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

CODE = "import os, bnn_posteriors; print(os.environ.get('XLA_FLAGS', ''))"


def flags_after_import(env_flags: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    if env_flags is not None:
        env["XLA_FLAGS"] = env_flags
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86-64 only")
def test_xla_cpu_code_is_pinned_to_avx2():
    assert flags_after_import(None) == "--xla_cpu_max_isa=AVX2"
    # other flags are kept, and a reader's own choice of ISA wins
    assert flags_after_import("--xla_force_host_platform_device_count=2") == (
        "--xla_force_host_platform_device_count=2 --xla_cpu_max_isa=AVX2"
    )
    assert flags_after_import("--xla_cpu_max_isa=SSE4_2") == "--xla_cpu_max_isa=SSE4_2"


@pytest.mark.slow
def test_arviz_warning_is_silenced_by_the_package(tmp_path):
    """ArviZ warns once a day (a stamp in the user cache); a fresh cache makes it warn."""

    def stderr_of(code: str, home: Path) -> str:
        env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache")}
        done = subprocess.run(
            [sys.executable, "-W", "default", "-c", code], capture_output=True, text=True, env=env
        )
        assert done.returncode == 0, done.stderr
        return done.stderr

    assert "FutureWarning" in stderr_of("import arviz", tmp_path / "bare")
    code = (
        "import numpy as np; from bnn_posteriors.evaluation import diagnostics as d; "
        "d.ess(np.ones((2, 8)))"
    )
    assert "FutureWarning" not in stderr_of(code, tmp_path / "package")
