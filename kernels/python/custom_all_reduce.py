"""Python gate for layergate's reference all-reduce (kernels/layergate_allreduce.cuh).

It admits exactly what the C++ dispatch `CustomAllreduce::allreduce<T>` serves:
world sizes 2..8 (odd ones too), with or without full NVLink, fp32/fp16/bf16,
any byte count that is a positive multiple of 16 and at most `max_size`.
The dispatch picks among its kernels by size thresholds, but every branch
launches one, so admission here never depends on those thresholds.
The layergate analyser checks this file against the dispatch (zero findings).

Multi-process: one process per rank (several may share a GPU). `group` must
be able to all-gather Python objects (a gloo "CPU" group, as upstream gates
take); each rank allocates its meta buffer (signals + scratch) and one
registered buffer with `ops.allocate_shared_buffer_and_handle`, the CUDA IPC
handles are all-gathered, and every peer's buffers are opened here
(kernels/layergate_ipc.cuh). `layergate_ops` is the torch extension in
kernels/torch/ (build.py builds it).
"""

from contextlib import contextmanager
from typing import List, Optional

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
        max_blocks: Optional[int] = None,
        timeout_ms: int = 10000,
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
        # Blocks per launch: ranks sharing a GPU must all be resident at once.
        if max_blocks is None:
            max_blocks = _blocks_per_rank(group, device)
        self.max_blocks = max_blocks
        self.meta_ptrs = self._create_shared_buffer(ops.meta_size() + ops.scratch_size(max_size))
        self.buffer_ptrs = self._create_shared_buffer(max_size)
        # Unused by layergate_ops (kept for the upstream signature).
        self.rank_data = torch.empty(0, dtype=torch.uint8, device=device)
        self._ptr = ops.init_custom_ar(
            self.meta_ptrs, self.rank_data, rank, full_nvlink, max_size, max_blocks, timeout_ms
        )
        ops.register_buffer(self._ptr, self.buffer_ptrs)
        self._capturing = False
        # Inputs bound by the last register_graph_buffers (pull calls captured
        # with an unregistered input; push calls need none).
        self.last_graph_buffers = 0
        self.disabled = False

    def _create_shared_buffer(self, size: int) -> List[int]:
        """Allocates `size` bytes here; returns every rank's copy as addressed here."""
        ptr, handle = ops.allocate_shared_buffer_and_handle(size)
        handles = [None] * self.world_size
        dist.all_gather_object(handles, bytes(handle.tolist()), group=self.group)
        ptrs = []
        for i, h in enumerate(handles):
            if i == self.rank:
                ptrs.append(ptr)
            else:
                ptrs.append(ops.open_mem_handle(torch.tensor(list(h), dtype=torch.uint8)))
        return ptrs

    @contextmanager
    def capture(self):
        """Wrap CUDA graph capture in this: calls captured inside read their
        inputs in place, and the peers' addresses are exchanged on exit."""
        try:
            self._capturing = True
            yield
        finally:
            self._capturing = False
            if not self.disabled:
                self.register_graph_buffers()

    def register_graph_buffers(self) -> None:
        handle, offset = ops.get_graph_buffer_ipc_meta(self._ptr)
        gathered = [None] * self.world_size
        dist.all_gather_object(gathered, (handle, offset), group=self.group)
        ops.register_graph_buffers(self._ptr, [g[0] for g in gathered], [g[1] for g in gathered])
        self.last_graph_buffers = len(offset)

    def last_algo(self) -> str:
        return ops.last_algo(self._ptr)

    def device_error(self) -> int:
        return ops.error(self._ptr)

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

    def all_reduce(
        self, inp: torch.Tensor, out: torch.Tensor = None, registered: Optional[bool] = None
    ) -> torch.Tensor:
        """registered (default: inside capture()): read `inp` in place (graph
        buffers, bound after capture); else copy it into the registered
        buffer first."""
        if registered is None:
            registered = self._capturing
        if out is None:
            out = torch.empty_like(inp)
        if registered:
            ops.all_reduce(self._ptr, inp, out, 0, 0)
        else:
            ops.all_reduce(self._ptr, inp, out, self.buffer_ptrs[self.rank], self.max_size)
        return out

    def close(self) -> None:
        """Collective-free teardown: synchronize the device first."""
        if self.disabled or not getattr(self, "_ptr", 0):
            return
        ops.dispose(self._ptr)
        self._ptr = 0
        for ptrs in (self.meta_ptrs, self.buffer_ptrs):
            for i, p in enumerate(ptrs):
                if i == self.rank:
                    ops.free_shared_buffer(p)
                else:
                    ops.close_mem_handle(p)
        self.disabled = True


def _blocks_per_rank(group: ProcessGroup, device: torch.device) -> int:
    """36 blocks, or fewer when ranks of `group` share this GPU (SMs / ranks here)."""
    props = torch.cuda.get_device_properties(device)
    ident = str(getattr(props, "uuid", "")) or str(torch.device(device))
    idents = [None] * dist.get_world_size(group=group)
    dist.all_gather_object(idents, ident, group=group)
    sharing = idents.count(ident)
    return max(1, min(36, props.multi_processor_count // sharing))
