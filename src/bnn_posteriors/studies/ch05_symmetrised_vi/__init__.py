"""Chapter 05's study (``book/05_symmetrised_vi.md``): its experiments as functions.

:mod:`.fits` (data, orbits, fits over widths, the identity test), :mod:`.repeats` (repeats,
curves of I, NUTS arrangements, the paired gains and their gate), :mod:`.pruning` (units
plain MFVI prunes), :mod:`.runs` (the chapter's fits from its settings), :mod:`.evidence`
(each claim's checks as :class:`~bnn_posteriors.claims.checking.Evidence`) and
:mod:`.figures`.
"""
