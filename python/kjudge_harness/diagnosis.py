"""What a failed role tells the candidate's author: `message` (one line, the cause) and `feedback`
(what a repair turn needs). Only the candidate's own code is named: its file is "candidate.py",
compiler lines are moved to the .py line that holds the inline source, and the judge's frames,
paths and tensor printouts never appear. The full traceback stays in the report's `error` for
the operator."""
import os
import re
import traceback

from .compiler_errors import first_error, first_error_line
from .source_lines import map_line

CANDIDATE = "candidate.py"
_MAX_FEEDBACK = 3000

# Paths of the judge's sandboxes: its code, the per-job build dirs, the extension cache.
_JUDGE_PATHS = re.compile(r"/opt/kjudge/\S*|(?:/job/ext|/tmp/ext-run|/cache/ext|/ext)/[0-9a-f]{32}/|/cache/pch\b")
_TORCH_INCLUDE = re.compile(r"/\S*/site-packages/torch/include/|/\S*/dist-packages/torch/include/")
# A tensor's repr (its numbers: secret inputs or just noise): "tensor([[ 0.1, ...]], dtype=...)"
_TENSOR = re.compile(r"tensor\(\[[^()]*\](?:,\s*[a-z_]+=[^(),]*)*\)")


class NoCandidateCode(Exception):
    """A completion with no code block to judge."""


class ExtensionBuildError(RuntimeError):
    """A load_inline build that failed: the compiler's output and what is needed to map its lines."""

    def __init__(self, text, build_dir, cpp_sources, cuda_sources):
        super().__init__(text)
        self.build_dir, self.cpp_sources, self.cuda_sources = build_dir, cpp_sources, cuda_sources


def scrub(text):
    text = _TENSOR.sub("tensor(...)", text)
    return _TORCH_INCLUDE.sub("torch/include/", _JUDGE_PATHS.sub("", text))


def _clip(text, limit=_MAX_FEEDBACK):
    return text if len(text) <= limit else text[:limit] + "\n[... cut]"


def _one_line(text, limit=300):
    line = next((x.strip() for x in text.splitlines() if x.strip()), "")
    return line if len(line) <= limit else line[:limit] + "..."


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


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


def _mapped_location(err, exc, candidate):
    """'candidate.py:L' for the error's line, or a phrase saying where load_inline put it."""
    name = os.path.basename(err.file)
    sources = exc.cpp_sources if name == "main.cpp" else exc.cuda_sources if name.startswith("cuda.") else None
    if sources is None:
        return None
    generated = _read(os.path.join(exc.build_dir, name)) or ""
    line = map_line(generated, err.line, sources, candidate or "") if candidate is not None else None
    if line:
        return f"{CANDIDATE}:{line}", line
    return f"load_inline's generated {name} (line {err.line}, outside your sources: includes or bindings)", None


def _relabel(lines, generated_name, line, py_line):
    """The generated file's name and line become the candidate's: in locations, in g++'s lead-in
    ("main.cpp: In function") and in its excerpt gutter ("    8 |", kept at its width)."""
    gen = re.escape(generated_name)
    out = []
    for x in lines:
        x = re.sub(rf"\b{gen}(?::{line}\b|\({line}\))", f"{CANDIDATE}:{py_line}", x)
        x = re.sub(rf"\b{gen}:(?=\s)", f"{CANDIDATE}:", x)
        x = re.sub(rf"^(\s*){line}(\s\|)", lambda m: f"{py_line}".rjust(len(m[1]) + len(str(line))) + m[2], x)
        out.append(x)
    return out


# ninja's progress and the compiler command lines: the judge's flags and paths, no diagnostics
_COMMAND = re.compile(r"^(?:\[\d+/\d+\] |FAILED: |ninja: )|\s-c\s\S+\s+-o\s")


def compiler_output(text):
    """The compiler's diagnostics of a failed build, judge paths and command lines taken out."""
    return "\n".join(scrub(x) for x in text.splitlines() if not _COMMAND.search(x)).strip() + "\n"


def _compile(exc, candidate):
    output = re.sub(r"^Error building extension '[^']*':\s*", "", str(exc))  # torch's prefix, not the compiler's
    err = first_error(output)
    if err is None:
        line = scrub(first_error_line(output) or _one_line(output))
        return {"message": f"the extension does not build: {line}", "feedback": "C++ build failed:\n" + _clip(line)}
    where = _mapped_location(err, exc, candidate)
    lines = [scrub(x) for x in err.lines]
    if where and where[1]:
        lines = _relabel(lines, os.path.basename(err.file), err.line, where[1])
    loc = where[0] if where else scrub(err.file) + (f":{err.line}" if err.line else "")
    message = f"C++ error at {loc}: {err.text}"
    more = f"\n({err.count - 1} more error(s) after this one; fix this first)" if err.count > 1 else ""
    return {"message": scrub(message), "feedback": _clip("\n".join(lines)) + more,
            "compiler_output": compiler_output(output)}


def _exception(exc, candidate_path):
    text = scrub(str(exc)).strip()
    head = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    out = [_clip(head, 1500)]
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if candidate_path and f.filename == candidate_path]
    for f in frames[-3:]:
        out.append(f"  at {CANDIDATE}:{f.lineno} in {f.name}: {(f.line or '').strip()}")
    return {"message": _one_line(head), "feedback": "\n".join(out)}


def diagnose(exc, candidate_path):
    """{"message", "feedback"[, "compiler_output"]} for an exception a role raised."""
    if isinstance(exc, NoCandidateCode):
        return {"message": f"no candidate code: {exc}",
                "feedback": f"No candidate code: {exc}. Answer with one fenced ```python block that defines "
                            "class ModelNew (and the kernels it calls)."}
    if isinstance(exc, ExtensionBuildError):
        return _compile(exc, _read(candidate_path) if candidate_path else None)
    if isinstance(exc, SyntaxError) and candidate_path and exc.filename == candidate_path:
        return _syntax(exc)
    return _exception(exc, candidate_path)
