"""Python gate for layergate's reference all-reduce (kernels/layergate_allreduce.cuh).

It admits exactly what the C++ dispatch `CustomAllreduce::allreduce<T>` serves:
world sizes 2..8 (odd ones too), with or without full NVLink, fp32/fp16/bf16,
any byte count that is a positive multiple of 16 and at most `max_size`.
The dispatch picks among its kernels by size thresholds, but every branch
launches one, so admission here never depends on those thresholds.
The layergate analyser checks this file against the dispatch (zero findings).
"""

import torch
import torch.distributed as dist
from torch.distributed import ProcessGroup

try:
    import layergate_ops as ops  # torch extension wrapping layergate_allreduce.cuh

    ops_available = True
except ImportError:
    ops_available = False


def is_weak_contiguous(inp: torch.Tensor) -> bool:
    return inp.is_contiguous() or (
        inp.storage().nbytes() - inp.storage_offset() * inp.element_size()
        == inp.numel() * inp.element_size()
    )


class CustomAllreduce:
    _SUPPORTED_WORLD_SIZES = [2, 3, 4, 5, 6, 7, 8]
    _SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)

    def __init__(
        self,
        group: ProcessGroup,
        device: torch.device,
        full_nvlink: bool,
        max_size: int = 8192 * 1024,
    ) -> None:
        self.disabled = True

        if not ops_available:
            return

        self.group = group
        rank = dist.get_rank(group=self.group)
        world_size = dist.get_world_size(group=self.group)
        if world_size == 1:
            return
        if world_size not in CustomAllreduce._SUPPORTED_WORLD_SIZES:
            return
        if max_size <= 0 or max_size % 16 != 0:
            return

        self.rank = rank
        self.world_size = world_size
        self.device = device
        self.max_size = max_size
        # No NVLink restriction: the dispatch has a push kernel for PCIe at
        # every world size. The flag only chooses among kernels.
        self.full_nvlink = full_nvlink
        self._ptr = ops.init_custom_ar(
            ops.exchange_rank_buffers(group, max_size), world_size, rank, full_nvlink, max_size
        )
        self.disabled = False

    def should_custom_ar(self, inp: torch.Tensor) -> bool:
        if self.disabled:
            return False
        inp_size = inp.numel() * inp.element_size()
        if inp_size == 0:
            return False
        if inp_size % 16 != 0:
            return False
        if inp.dtype not in CustomAllreduce._SUPPORTED_DTYPES:
            return False
        if not is_weak_contiguous(inp):
            return False
        return inp_size <= self.max_size

    def all_reduce(self, inp: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
        if out is None:
            out = torch.empty_like(inp)
        ops.all_reduce(self._ptr, inp, out)
        return out
