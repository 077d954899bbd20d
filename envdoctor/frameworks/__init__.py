"""One spec per framework (torch, tensorflow, jax, cupy): what builds exist and whether one fits a target.

    from envdoctor.frameworks import registry
    spec = registry.get("torch")
    spec.candidates(matrices, target)              # newest first
    spec.fits(matrices, candidate, target)         # [] or the problems
"""
