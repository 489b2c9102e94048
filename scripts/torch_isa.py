"""scripts/torch_isa.py: `--isa` of the scripts that time attn against PyTorch (bench_torch.py,
bench_train_torch.py): both sides capped at one kernel family, so an AVX-512 machine can measure
the AVX2 figures."""
import os
import sys


def force_isa(isa):
    """Caps both sides at one kernel family, before torch is imported anywhere (it reads these
    once, when it loads) and before attn runs (ATTN_ISA). ATEN_CPU_CAPABILITY caps only ATen's
    own vector kernels: the GEMMs inside SDPA come from oneDNN and MKL, which choose their own
    instructions, so they are capped too (ONEDNN_MAX_CPU_ISA, MKL_ENABLE_INSTRUCTIONS); without
    that, "avx2" on an AVX-512 machine measured torch's GEMMs at AVX-512 against attn at AVX2."""
    if isa is None:
        return
    os.environ["ATTN_ISA"] = isa
    os.environ["ATEN_CPU_CAPABILITY"] = {"generic": "default", "avx2": "avx2"}.get(isa, "avx512")
    onednn = {"generic": "SSE41", "avx2": "AVX2", "avx512": "AVX512_CORE_BF16"}.get(isa)
    mkl = {"generic": "SSE4_2", "avx2": "AVX2", "avx512": "AVX512"}.get(isa)
    if onednn:
        os.environ["ONEDNN_MAX_CPU_ISA"] = onednn
    if mkl:
        os.environ["MKL_ENABLE_INSTRUCTIONS"] = mkl


def cpu_has_avx512():
    """True when this machine's processor lists avx512f (Linux's /proc/cpuinfo); False elsewhere."""
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and " avx512f" in line for line in f)
    except OSError:
        return False


def avx2_binary_note(isa, attn):
    """A note (stderr) when, on an AVX-512 CPU, --isa avx2 times an attn binary that is not the avx2 preset's: a
    native build on an AVX-512 CPU compiles the AVX2 kernels with AVX-512's 32 vector registers
    at hand, which an AVX2-only CPU does not have, so its figures can flatter the AVX2 path.
    `cmake --preset avx2 && cmake --build build-avx2 --target attn` builds the faithful one
    (-march=x86-64-v3), and --attn build-avx2/attn times it."""
    if isa != "avx2" or attn is None or not cpu_has_avx512():
        return
    if os.path.basename(os.path.dirname(os.path.abspath(attn))) != "build-avx2":
        print(f"note: --isa avx2 with {attn}: a native build on an AVX-512 CPU gives the AVX2 kernels "
              "AVX-512's registers; for an AVX2-only CPU's figures build the avx2 preset and pass "
              "--attn build-avx2/attn", file=sys.stderr)
