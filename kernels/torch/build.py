"""Builds the layergate_ops torch extension (JIT, torch.utils.cpp_extension.load).

    python3 kernels/torch/build.py [--build-dir DIR] [--arch sm_90]

Prints the directory holding layergate_ops*.so; put it on sys.path (or use
load_ops() from Python) and `import layergate_ops`. Needs torch with CUDA and
nvcc; the kernels compile for one architecture (default: the current GPU's).
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.dirname(HERE)
SOURCES = ["layergate_ops.cpp", "ops_impl.cu", "ops_ar_f32.cu", "ops_ar_f16.cu", "ops_ar_bf16.cu"]


def default_arch():
    import torch

    major, minor = torch.cuda.get_device_capability()
    return "sm_%d%d" % (major, minor)


def load_ops(build_dir=None, arch=None, verbose=False):
    """Builds (or reuses) the extension, imports it as `layergate_ops`."""
    from torch.utils.cpp_extension import load

    build_dir = build_dir or os.path.join(KERNELS, "..", "build-kernels", "torch_ext")
    os.makedirs(build_dir, exist_ok=True)
    arch = arch or default_arch()
    mod = load(
        name="layergate_ops",
        sources=[os.path.join(HERE, s) for s in SOURCES],
        extra_include_paths=[KERNELS, HERE],
        extra_cflags=["-O2", "-std=c++17"],
        extra_cuda_cflags=["-O3", "-std=c++17", "-arch=" + arch],
        build_directory=build_dir,
        verbose=verbose,
    )
    sys.modules["layergate_ops"] = mod
    return mod, build_dir


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir")
    ap.add_argument("--arch")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    mod, d = load_ops(a.build_dir, a.arch, a.verbose)
    print(os.path.abspath(d))
    print("layergate_ops:", ", ".join(sorted(n for n in dir(mod) if not n.startswith("_"))))


if __name__ == "__main__":
    main()
