"""Where a line of load_inline's generated source file sits in the candidate's .py.

load_inline writes its cpp_sources / cuda_sources strings into main.cpp / cuda.cu after a few
lines of its own; those strings are literals in the candidate's file, so a compiler's line number
is only useful to a model once it is moved back to the line of the .py that holds the same text."""
import ast


def source_at(generated, line, sources):
    """(index of the source string, 0-based line within it) of 1-based `line` of the generated
    file, or None when the line is load_inline's own (includes, bindings)."""
    for i, src in enumerate(sources):
        if not src:
            continue
        pos = generated.find(src)
        if pos < 0:
            continue
        k = line - (generated.count("\n", 0, pos) + 1)
        if 0 <= k <= src.count("\n"):
            return i, k
    return None


def _string_constants(candidate):
    try:
        return [n for n in ast.walk(ast.parse(candidate)) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    except (SyntaxError, ValueError):
        return []


def candidate_line(candidate, source, k):
    """1-based line of the candidate's file that holds line k of `source`, or None."""
    want = source.split("\n")[k].strip()
    lines = candidate.split("\n")
    pos = candidate.find(source)
    if pos >= 0:  # a raw literal: the text is there verbatim
        return candidate.count("\n", 0, pos) + 1 + k
    # an escaped literal ("\\n" inside, \t, ...): the string constant of that value, checked by text
    for node in _string_constants(candidate):
        # that line holds the text, its escapes aside (a tab written as backslash-t)
        if node.value == source and node.lineno + k <= len(lines) and want in lines[node.lineno + k - 1]:
            return node.lineno + k
    hits = [i + 1 for i, text in enumerate(lines) if want and text.strip() == want]
    return hits[0] if len(hits) == 1 else None  # built some other way: only an unambiguous line


def map_line(generated, line, sources, candidate):
    """The candidate's line for `line` of the generated file, or None."""
    at = source_at(generated, line, sources)
    return candidate_line(candidate, sources[at[0]], at[1]) if at else None
