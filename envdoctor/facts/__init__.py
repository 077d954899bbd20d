"""Facts derived from a snapshot (and the matrices) that several rule families read.

`builds`: what each installed framework build states about itself (its CUDA, HIP, cuDNN, arch list) and
whether envdoctor's data has a row for its release.
"""
