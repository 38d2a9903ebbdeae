"""Chapter 09's study (``book/09_ggn_null_space.md``): the null space of the GGN.

``study`` fits the MAPs and Laplace approximations and returns the claim evidence
(C9.1 rank and kernel, C9.2 sampled vs linearised LA, C9.3 the projected posterior of
[NS], C9.6 the Lanczos log-determinant of [LZ]); ``diffusion`` [RI]'s Laplace diffusion
(C9.4); ``viking`` VIKING of [VK] against the book's baselines (C9.5); ``tie_back`` the
kernel split of chapter 6's MetricBNN and sampled LA (a further finding of C9.2);
``figures`` draws them.
"""
