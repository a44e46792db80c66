"""A failed load_inline build as a repair turn needs it: the first compiler error, its location
moved from load_inline's generated main.cpp / cuda.cu to the line of candidate.py that holds the
same source text, and the compiler's diagnostics without ninja's command lines."""
import os
import re
import types

from .compiler_errors import first_error, first_error_line
from .judge_text import CANDIDATE, clip, drop_build_noise, one_line, read, scrub
from .source_lines import map_line


class ExtensionBuildError(RuntimeError):
    """A load_inline build that failed: the compiler's output and what is needed to map its lines."""

    def __init__(self, text, build_dir, cpp_sources, cuda_sources):
        super().__init__(text)
        self.build_dir, self.cpp_sources, self.cuda_sources = build_dir, cpp_sources, cuda_sources


def _mapped_location(err, exc, candidate):
    """'candidate.py:L' for the error's line, or a phrase saying where load_inline put it."""
    name = os.path.basename(err.file)
    sources = exc.cpp_sources if name == "main.cpp" else exc.cuda_sources if name.startswith("cuda.") else None
    if sources is None:
        return None
    generated = read(os.path.join(exc.build_dir, name)) or ""
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


_GENERATED_REF = re.compile(r"\b(main\.cpp|cuda\.cu):(\d+)\b|\b(cuda\.cu)\((\d+)\)")


def _relabel_origins(lines, exc, candidate):
    """Lines of the lead-in that name the generated files ("main.cpp:9:4:   required from here")
    get the candidate's line; returns them and the last such location (the nearest to the error)."""
    origin, out = None, []
    for x in lines:
        m = _GENERATED_REF.search(x)
        if m:
            name, line = (m[1], int(m[2])) if m[1] else (m[3], int(m[4]))
            where = _mapped_location(types.SimpleNamespace(file=name, line=line), exc, candidate)
            if where and where[1]:
                x = _relabel([x], name, line, where[1])[0]
                origin = where[0]
        out.append(x)
    return out, origin


# ninja's progress and the compiler command lines: the judge's flags and paths, no diagnostics
_COMMAND = re.compile(r"^(?:\[\d+/\d+\] |FAILED: |ninja: )|\s-c\s\S+\s+-o\s")


def compiler_output(text):
    """The compiler's diagnostics of a failed build, judge paths and command lines taken out."""
    return "\n".join(scrub(x) for x in text.splitlines() if not _COMMAND.search(x)).strip() + "\n"


def compile_feedback(exc, candidate):
    """{"message", "feedback", "compiler_output"} for an ExtensionBuildError; `candidate`: the .py text."""
    output = drop_build_noise(re.sub(r"^Error building extension '[^']*':\s*", "", str(exc)))  # torch's prefix
    err = first_error(output)
    if err is None:
        line = scrub(first_error_line(output) or one_line(output))
        return {"message": f"the extension does not build: {line}", "feedback": "C++ build failed:\n" + clip(line)}
    where = _mapped_location(err, exc, candidate)
    lines = [scrub(x) for x in err.lines]
    if where and where[1]:
        lines = _relabel(lines, os.path.basename(err.file), err.line, where[1])
    loc = where[0] if where else scrub(err.file) + (f":{err.line}" if err.line else "")
    if where is None:  # an error inside a header: the candidate's line is the one "required from here"
        lines, origin = _relabel_origins(lines, exc, candidate)
        loc += f" (from {origin})" if origin else ""
    message = f"C++ error at {loc}: {err.text}"
    more = f"\n({err.count - 1} more error(s) after this one; fix this first)" if err.count > 1 else ""
    return {"message": scrub(message), "feedback": clip("\n".join(lines)) + more,
            "compiler_output": compiler_output(output)}
