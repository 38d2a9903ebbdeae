"""Helper package of the book *Posteriors of Bayesian neural networks*.

Its folders follow the flow of the book (ARCHITECTURE.md has one line per module):
``data`` → ``models`` (with ``models.symmetry``) and ``theory`` → ``inference`` →
``evaluation`` → ``studies`` (one folder per chapter) → ``claims`` → the chapters; ``store``
keeps results, ``site`` the profiles, tables, figures and build helpers, ``util`` the input
checks, and ``cli`` the ``bnn-posteriors`` command.
"""

import os
import platform
import warnings

# Pin XLA's CPU code generation to AVX2 before JAX starts its backend, so that a machine
# with AVX-512 compiles the same vector code as one without (README: "Determinism").
if platform.machine().lower() in ("x86_64", "amd64") and "xla_cpu_max_isa" not in os.environ.get(
    "XLA_FLAGS", ""
):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_cpu_max_isa=AVX2".strip()

# ArviZ 0.x announces its 1.0 refactor on import; the book pins arviz<1.
warnings.filterwarnings("ignore", category=FutureWarning, module="arviz")

__version__ = "0.1.0"
