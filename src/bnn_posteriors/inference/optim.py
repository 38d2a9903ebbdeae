"""Gradient-based minimisation: the package's one optimisation loop.

:func:`minimise` runs an optax optimiser in one ``lax.scan``; MAP training, deep
ensembles, MetricBNN's autoencoder and :func:`multistart_minimise` (Adam from many starts
at once with ``jax.vmap``, then a saddle-free Newton polish) all step through it.
Mean-field VI steps through NumPyro's ``SVI.update`` instead (:mod:`.vi`).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree

from bnn_posteriors.util.validate import positive_int


def newton_step(loss_fn, params, *args):
    """One saddle-free Newton step on ``loss_fn(params, *args)`` with a backtracking search.

    The direction is −V |Λ|⁻¹ Vᵀ ∇ with H = V Λ Vᵀ (Dauphin et al., 2014), exactly
    Newton's near a strict minimum; the best of the step lengths 1, 1/2, …, 2⁻¹⁵
    is taken if it lowers the loss. For small parameter vectors only.
    """
    flat, unflatten = ravel_pytree(params)

    def f(v):
        return loss_fn(unflatten(v), *args)

    value, grad = jax.value_and_grad(f)(flat)
    eigval, eigvec = jnp.linalg.eigh(jax.hessian(f)(flat))
    scale = jnp.maximum(jnp.abs(eigval), 1e-12)
    direction = eigvec @ ((eigvec.T @ grad) / scale)
    proposals = flat - (2.0 ** -jnp.arange(16.0))[:, None] * direction
    values = jax.vmap(f)(proposals)
    best = jnp.argmin(values)
    return unflatten(jnp.where(values[best] < value, proposals[best], flat))


def minimise(loss_fn, params, optimiser, *, num_steps=None, xs=None, state=None, has_aux=False):
    """Minimise ``loss_fn(params[, x_t])`` with ``optimiser`` (optax) in one ``lax.scan``.

    Step t sees ``xs[t]`` (a random key, a minibatch's indices; leading axis = steps) if
    ``xs`` is given, else ``num_steps`` steps see nothing. ``state`` continues an earlier
    run's optimiser state (default: a fresh ``optimiser.init(params)``). With ``has_aux``
    ``loss_fn`` returns ``(loss, aux)`` and the trace holds both. Traceable (jit, vmap).
    Returns ``(params, state, trace)``: the trace of the loss at each step's start point.
    """
    value_and_grad = jax.value_and_grad(loss_fn, has_aux=has_aux)

    def step(carry, x):
        params, state = carry
        value, grad = value_and_grad(params) if xs is None else value_and_grad(params, x)
        updates, state = optimiser.update(grad, state, params)
        return (optax.apply_updates(params, updates), state), value

    state = optimiser.init(params) if state is None else state
    (params, state), trace = jax.lax.scan(step, (params, state), xs, length=num_steps)
    return params, state, trace


@functools.partial(
    jax.jit, static_argnames=("loss_fn", "num_steps", "learning_rate", "newton_steps")
)
def _run(loss_fn, inits, args, num_steps, learning_rate, newton_steps):
    schedule = optax.cosine_decay_schedule(learning_rate, num_steps, alpha=1e-3)
    opt = optax.adam(schedule)

    def one(params):
        params, _, trace = minimise(lambda p: loss_fn(p, *args), params, opt, num_steps=num_steps)
        params = jax.lax.fori_loop(
            0, newton_steps, lambda _, p: newton_step(loss_fn, p, *args), params
        )
        return params, loss_fn(params, *args), trace

    return jax.vmap(one)(inits)


def multistart_minimise(
    loss_fn,
    inits,
    *args,
    num_steps: int = 5000,
    learning_rate: float = 1e-2,
    newton_steps: int = 0,
):
    """Minimise ``loss_fn(params, *args)`` from every start in ``inits`` with Adam.

    The step size decays along a cosine schedule; ``newton_steps`` saddle-free
    Newton steps (:func:`newton_step`) then polish each end point to machine
    precision (small parameter vectors only). ``loss_fn`` must be a function
    defined once (it is a static argument of the compiled program; ``args`` are
    traced, so new data or settings of the same shape reuse the compilation).
    ``inits``: pytree with a leading axis of starts (S, ...).
    Returns ``(params (S, ...), final_loss (S,), loss_trace (S, num_steps))``.
    """
    leaves = jax.tree_util.tree_leaves(inits)
    if not leaves or any(jnp.ndim(v) < 1 for v in leaves):
        raise ValueError("inits must be a pytree of arrays with a leading axis of starts")
    num_steps = positive_int("num_steps", num_steps)
    if not learning_rate > 0:
        raise ValueError(f"learning_rate must be positive, got {learning_rate}")
    if not (isinstance(newton_steps, int) and newton_steps >= 0):
        raise ValueError(f"newton_steps must be a non-negative integer, got {newton_steps!r}")
    args = jax.tree_util.tree_map(jnp.asarray, tuple(args))
    return _run(loss_fn, inits, args, num_steps, float(learning_rate), newton_steps)
