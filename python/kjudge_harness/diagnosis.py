"""What a failed role tells the candidate's author: `message` (one line, the cause) and `feedback`
(what a repair turn needs), never the judge's frames, paths or tensor printouts (judge_text.py).
The full traceback stays in the report's `error` for the operator."""
import re
import traceback

from .compile_feedback import ExtensionBuildError, compile_feedback
from .judge_text import CANDIDATE, clip, one_line, read, scrub


class NoCandidateCode(Exception):
    """A completion with no code block to judge."""


def _syntax(exc):
    where = f"{CANDIDATE}, line {exc.lineno}" if exc.lineno else CANDIDATE
    msg = f"SyntaxError: {exc.msg} ({where})"
    out = [msg]
    if exc.text:
        code = exc.text.rstrip("\n")
        out.append("    " + code.strip())
        if exc.offset:
            out.append("    " + " " * max(0, exc.offset - 1 - (len(code) - len(code.lstrip()))) + "^")
    return {"message": msg, "feedback": "\n".join(out)}


def syntax_feedback(source):
    """The SyntaxError of `source` as `_syntax` words it, or None when it parses."""
    try:
        compile(source, CANDIDATE, "exec")
    except SyntaxError as exc:
        return _syntax(exc)
    except ValueError as exc:  # NUL bytes
        return {"message": f"ValueError: {exc}", "feedback": f"ValueError: {exc}"}
    return None


def _exception(exc, candidate_path):
    text = scrub(str(exc)).strip()
    head = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    out = [clip(head, 1500)]
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if candidate_path and f.filename == candidate_path]
    for f in frames[-3:]:
        out.append(f"  at {CANDIDATE}:{f.lineno} in {f.name}: {(f.line or '').strip()}")
    return {"message": one_line(head), "feedback": "\n".join(out)}


_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
_TRIED = re.compile(r"Tried to allocate ([0-9.]+) (B|KiB|MiB|GiB|TiB)")


def device_bytes_needed(exc):
    """For a device out-of-memory error: what the process held plus what it asked for, so the daemon
    can tell a candidate that asked for more than it was admitted with from one whose device memory
    was taken by other jobs (None for other errors)."""
    if type(exc).__name__ != "OutOfMemoryError" and "CUDA error: out of memory" not in str(exc):
        return None  # (the driver's own allocations fail as an AcceleratorError with that text)
    m = _TRIED.search(str(exc))
    import torch  # loaded: the error came from it
    held = torch.cuda.memory_reserved() if torch.cuda.is_available() else 0
    return int(held + (float(m.group(1)) * _UNITS[m.group(2)] if m else 0))


def diagnose(exc, candidate_path):
    """{"message", "feedback"[, "compiler_output"][, "device_bytes_needed"]} for an exception a role raised."""
    needed = device_bytes_needed(exc)
    out = _diagnose(exc, candidate_path)
    if needed is not None:
        out["device_bytes_needed"] = needed
    return out


def _diagnose(exc, candidate_path):
    if isinstance(exc, NoCandidateCode):
        return {"message": f"no candidate code: {exc}",
                "feedback": f"No candidate code: {exc}. Answer with one fenced ```python block that defines "
                            "class ModelNew (and the kernels it calls)."}
    if isinstance(exc, ExtensionBuildError):
        return compile_feedback(exc, read(candidate_path) if candidate_path else None)
    if isinstance(exc, SyntaxError) and candidate_path and exc.filename == candidate_path:
        return _syntax(exc)
    return _exception(exc, candidate_path)
