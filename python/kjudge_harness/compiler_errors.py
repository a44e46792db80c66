"""The first error of a compiler's output (g++ or nvcc, as ninja prints them in a load_inline
build), with the lines around it that say where and why. A repair turn needs one error, not the
command lines and the cascade after it. Pure text in, text out."""
import re
from dataclasses import dataclass, field

# g++ "file:12:3: error: msg" / "file:12: fatal error: msg", nvcc "file(12): error: msg"
_ERROR = re.compile(r"^(?P<file>[^\s:()][^:()]*?)(?::(?P<line>\d+)(?::(?P<col>\d+))?|\((?P<pline>\d+)\))"
                    r":\s+(?:fatal\s+)?error:\s*(?P<msg>.*)$")
# what g++ prints before an error to say where it is (function, template instantiation, includes)
_LEAD_IN = re.compile(r": In (?:member |static member )?function|: In instantiation of|required from|"
                      r"^In file included from|^\s+from \S|: In constructor|: In destructor|: At global scope")
# g++'s source excerpt ("   8 |   code", "     |   ^~~~") and nvcc's (indented code, then the caret)
_EXCERPT = re.compile(r"^\s*\d*\s*\|")


@dataclass
class CompilerError:
    file: str                 # as the compiler named it
    line: int                 # 0 when the compiler gave none
    column: int
    text: str                 # the message after "error: "
    lines: list = field(default_factory=list)  # the error with its lead-in and source excerpt
    count: int = 1            # errors in the whole output


def _excerpt_after(lines, i):
    out = []
    for line in lines[i + 1:i + 4]:
        if _ERROR.match(line) or not line.strip() or not (line.startswith(" ") or _EXCERPT.match(line)):
            break
        out.append(line)
    return out


def first_error(output):
    """The first error in `output`, or None when no line looks like a compiler error."""
    lines = output.splitlines()
    count = sum(1 for line in lines if _ERROR.match(line))
    for i, line in enumerate(lines):
        m = _ERROR.match(line)
        if not m:
            continue
        lead = []
        for prev in reversed(lines[max(0, i - 6):i]):
            if not _LEAD_IN.search(prev):
                break
            lead.insert(0, prev)
        return CompilerError(m["file"], int(m["line"] or m["pline"] or 0), int(m["col"] or 0), m["msg"].strip(),
                             lead + [line] + _excerpt_after(lines, i), count)
    return None


def first_error_line(output):
    """A line naming an error when no compiler diagnostic does (the linker, ninja itself)."""
    for line in output.splitlines():
        if re.search(r"\berror\b", line, re.I) and not line.startswith(("ninja:", "FAILED:")):
            return line.strip()
    return None
