"""Take the candidate's code out of a raw model completion (markdown).

``extract_code(completion) -> (code | None, message)``. The candidate is the LAST fenced Python
block (``` or ~~~, tag python/py/python3 or none) that defines ``class ModelNew``: models often
draft a version, then correct it, and reasoning traces come before the answer. Without such a
block, a completion that is itself Python defining ModelNew is taken whole.

Standard library only: this runs inside the sandbox with the system Python.
"""

import ast
import re
from dataclasses import dataclass

PYTHON_TAGS = ("", "python", "py", "python3")
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_CLASS_MODEL_NEW = re.compile(r"^\s*class\s+ModelNew\b", re.M)


@dataclass
class Block:
    index: int      # 1-based, among all fenced blocks
    tag: str        # first word of the info string, lower case ("" when none)
    code: str
    closed: bool


def fenced_blocks(text):
    """Every fenced code block, in order. A block left open at the end runs to the end."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        # a ``` fence's info string cannot contain backticks (CommonMark)
        if not m or (m["fence"][0] == "`" and "`" in m["info"]):
            i += 1
            continue
        fence, indent = m["fence"], len(m["indent"])
        tag = (m["info"].strip().split() or [""])[0].lower().lstrip("{.").rstrip("}")
        body, i, closed = [], i + 1, False
        while i < len(lines):
            line = lines[i]
            stripped = line.strip()
            if stripped.startswith(fence[0] * len(fence)) and set(stripped) == {fence[0]} \
                    and len(line) - len(line.lstrip(" ")) <= 3:
                closed = True
                i += 1
                break
            # content lines lose up to the fence's own indentation (fences inside list items)
            body.append(line[min(indent, len(line) - len(line.lstrip(" "))):])
            i += 1
        blocks.append(Block(len(blocks) + 1, tag, "\n".join(body).strip("\n") + "\n", closed))
    return blocks


def defines_model_new(code):
    """The code defines class ModelNew: by the AST when it parses, else textually."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return bool(_CLASS_MODEL_NEW.search(code))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            return True
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "ModelNew" for t in node.targets):
            return True
    return False


def _parses(code):
    try:
        ast.parse(code)
        return True
    except (SyntaxError, ValueError):
        return False


def extract_code(completion):
    """(code, message) from a raw completion; code is None when there is nothing to judge."""
    blocks = fenced_blocks(completion)
    python = [b for b in blocks if b.tag in PYTHON_TAGS]
    for b in reversed(python):
        if defines_model_new(b.code):
            what = b.tag or "untagged"
            note = "" if b.closed else ", unclosed fence"
            return b.code, f"took block {b.index} of {len(blocks)} ({what}{note})"
    if _parses(completion) and defines_model_new(completion):
        return completion, "took the whole completion" + (
            f" ({len(blocks)} fenced blocks found, none defines ModelNew)" if blocks else " (no fenced blocks)")
    if not blocks:
        return None, "no code block found in the completion"
    return None, f"no code block defines class ModelNew ({len(blocks)} blocks found)"
