"""What the benchmarks that run PyTorch beside tensoropt share (imported by scripts/bench/run and
scripts/bench/train, whose directory Python puts first on sys.path)."""

import os


def thread_env(threads):
    """The environment of a PyTorch child: torch.set_num_threads sizes PyTorch's own pool only;
    Debian's PyTorch runs its matrix products on OpenBLAS (libopenblas0-pthread), whose pool is
    sized by OPENBLAS_NUM_THREADS when the library loads (default: every core). Unset, a process
    told to use 1 thread multiplies matrices on 2 (measured: 65 ms against 134 ms for the same
    GEMMs), and two DDP processes run 4 threads on 2 cores."""
    n = str(threads)
    return dict(os.environ, OMP_NUM_THREADS=n, OPENBLAS_NUM_THREADS=n, MKL_NUM_THREADS=n)
