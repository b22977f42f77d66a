# Which RMS-norm kernel a layer gets: the fused CUDA one where this returns
# True, the PyTorch one elsewhere. An example gate for docs/targets.md.


def use_fused_rms_norm(hidden_size, has_residual):
    if has_residual:
        return False
    # Any multiple of 1024 up to 8192 "is supported".
    return hidden_size % 1024 == 0 and hidden_size <= 8192


def rms_norm(x, weight, residual=None):
    if use_fused_rms_norm(x.shape[-1], residual is not None):
        return torch.ops._C.fused_rms_norm(x, weight, x.shape[-1])
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * weight
