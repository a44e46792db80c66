"""Whether a problem's reference gives a candidate anything to be judged against: an output that
is NaN/Inf on every input set, or the same output for different inputs (weights initialised to
zero, an input that is never read), lets any constant pass. Either is the job's fault
(INVALID_JOB), never a free OK."""
import torch

from kjudge_protocol.input_contract import f64_total, sample


def fingerprint(values):
    """Equal tensors give equal fingerprints; different ones almost surely do not: the float64
    sum of the whole tensor (chunk by chunk: a 6 GB input must not double on the device) and of
    a strided sample with a position weight."""
    prints = []
    for v in values:
        if not isinstance(v, torch.Tensor):
            prints.append(repr(v))
            continue
        flat = v.detach().reshape(-1)
        total = f64_total(flat, nan_as_zero=flat.is_floating_point())
        part = torch.nan_to_num(sample(flat).to(torch.float64), nan=7.0, posinf=11.0, neginf=-13.0)
        weight = torch.arange(1, part.numel() + 1, device=part.device, dtype=torch.float64).remainder_(97)
        prints.append((tuple(v.shape), total, float((part * weight).sum())))
    return tuple(prints)


class Meaning:
    def __init__(self):
        self.sets = 0
        self.all_nonfinite = True
        self.inputs, self.outputs = set(), set()

    def add(self, values, out):
        self.sets += 1
        if out.is_floating_point() and bool(torch.isfinite(out).all()) or not out.is_floating_point():
            self.all_nonfinite = False
        self.inputs.add(fingerprint(values))
        self.outputs.add(fingerprint([out]))

    def nonfinite(self):
        return bool(self.sets) and self.all_nonfinite

    def constant(self):
        return self.sets > 1 and len(self.inputs) > 1 and len(self.outputs) == 1

    def problem(self):
        """The reason the reference is meaningless, or ''."""
        if self.nonfinite():
            return ("the reference's output has NaN/Inf values on every input set: a candidate has nothing to be "
                    "compared against (check get_inputs' value range and the model's weights)")
        if self.constant():
            return ("the reference's output is the same on every input set although the inputs differ: it does not "
                    "depend on its inputs (weights initialised to zero?), so any constant would pass")
        return ""
