"""Facts derived from a snapshot (and the matrices) that several rule families, gate, lock and onboard read:
one home per shared concept, so two callers cannot disagree. Rule modules import these, never each other
(tests/test_import_graph.py). A facts module never imports envdoctor.rules at module level (that package
imports every rule module); it takes a Context or a Snapshot.

- `versions`: parse_version, major_minor (X.Y series), normalize_cc / cc_tuple, public / local_label, lower_bound
- `platform`: the platform keys and what each means (platform_facts, wheel tags, uv's name, manylinux tags), the
  platform key of a snapshot, the PEP 508 marker environment, the interpreter's X.Y.Z, distro families, which
  driver table applies
- `pins`: Requires-Dist pins with markers and extras (Pin, parse_pins, in_effect), names (canonical_name),
  specifiers (spec, satisfies), wheel names (is_cudnn_wheel, cudnn_wheel_major, jax_plugin)
- `driver`: what a driver runs (DriverFacts, driver_runs, driver_native, cuda_floor, has_mvc)
- `gpus`: visible GPUs (CUDA_VISIBLE_DEVICES), GPU labels, compiled-arch kernels for a GPU (kernel_for)
- `builds`: what a framework build states about itself, its CUDA build (cuda_builds), its arch list
- `labels`: how findings name frameworks and cite sources (fw_label, fw_source, row_source)
- `loader`: libcuda resolution, WSL 2, the driver-unusable cause key
- `gpu_support`: driver branches and cuDNN releases against a GPU's architecture
- `libraries`: which CUDA libraries a framework really loads (its extras in effect)
"""
