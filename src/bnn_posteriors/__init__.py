"""Helper package of the book *Posteriors of Bayesian neural networks*.

Modules: ``profiles`` (run budgets), ``claims`` (claim checks), ``scorecard``,
``data`` (the data registry), ``nets`` (MLPs as pytrees and their symmetries),
``symmetry`` (priors under symmetries), ``models`` (NumPyro
models), ``inference`` (NUTS, MFVI), ``metrics``, ``theory`` (closed forms) and
``plotting``.
"""

import warnings

# ArviZ 0.x announces its 1.0 refactor on import; the book pins arviz<1.
warnings.filterwarnings("ignore", category=FutureWarning, module="arviz")

__version__ = "0.1.0"
