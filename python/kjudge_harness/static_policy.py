"""Static pre-check of a KernelBench candidate (``class ModelNew``), before anything of it runs.

``check(source, backend, overrides)`` parses the candidate and runs one detector per rule of
``static_rules.json``. It works on the Python AST: names are resolved through imports and simple
aliases (``import torch as t``, ``from torch import cuda as c``, ``x = torch.cuda``,
``m = __import__("time")``, ``getattr(torch, "cuda")``, string folding such as ``"ex" + "ec"``),
so renaming does not hide a module. Only string literals (kernel sources) are scanned textually,
for C/CUDA patterns. The check is deliberately conservative on honest code: what an honest kernel
may legitimately do (streams, half precision, torch ops in forward) is only flagged; the runtime
checks decide those.

Standard library only: this runs inside the sandbox with the system Python.
"""

import ast
import builtins
import json
import re
from dataclasses import dataclass
from pathlib import Path

RULES_PATH = Path(__file__).with_name("static_rules.json")
BACKENDS = ("cuda", "triton", "cpu", "hip", "musa")
SEVERITIES = ("reject", "flag", "off")


@dataclass(frozen=True)
class Rule:
    id: str
    description: str
    severity: str
    verdict: str
    cheat_class: str


def load_rules(path=RULES_PATH):
    """The rule table: (data, {rule id: Rule}) with rules in report order."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    rules = {}
    for r in data["rules"]:
        rules[r["id"]] = Rule(r["id"], r["description"], r["severity"], r["verdict"], r["cheat_class"])
    return data, rules


_DATA, RULES = load_rules()
VERSION = _DATA["version"]
PLUMBING = frozenset(_DATA["plumbing"])
PLUMBING_NAMESPACES = tuple(_DATA["plumbing_namespaces"])
COMPUTE_OP_NAMESPACES = tuple(_DATA["compute_op_namespaces"])
TENSOR_COMPUTE_METHODS = frozenset(_DATA["tensor_compute_methods"])

# Names a candidate can call without importing them. A name the candidate binds itself with
# def/class/parameter is not the builtin; one it assigns (`exec = exec`) still may be.
BUILTIN_NAMES = frozenset(dir(builtins)) | {"__builtins__"}
LOCAL = "local:"  # prefix of names that are the candidate's own (variables, self.x, ...)

LOADERS = ("torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension.load")
TRITON_JIT = ("triton.jit", "triton.runtime.jit", "triton.runtime.jit.jit")
CUDA_PY_KERNELS = ("cupy.RawKernel", "cupy.RawModule", "cupy.ElementwiseKernel", "cupy.ReductionKernel",
                   "cupyx.jit.rawkernel", "numba.cuda.jit")


# ---------------------------------------------------------------------------------------------
# helpers


def _matches(q, prefixes):
    """q is one of the dotted names in prefixes or lies under one of them."""
    return any(q == p or q.startswith(p + ".") for p in prefixes)


def _canon(q):
    """builtins.exec / __builtins__.exec -> exec (the access to builtins itself is reported apart)."""
    for p in ("builtins.", "__builtins__."):
        if q.startswith(p):
            return q[len(p):]
    return q


def const_str(node, holes=False):
    """The value of a string expression built from literals ('ex' + 'ec', 'cexe'[::-1],
    chr(101), ''.join([...]), f-strings); None if it depends on anything else. With holes=True,
    unknown f-string parts read as '{}' (for textual scans, not for names)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = const_str(node.left, holes), const_str(node.right, holes)
        return a + b if a is not None and b is not None else None
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            s = const_str(v.value if isinstance(v, ast.FormattedValue) else v, holes)
            if s is None:
                if not holes:
                    return None
                s = "{}"
            parts.append(s)
        return "".join(parts)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
        s, sl = const_str(node.value, holes), node.slice
        if s is not None and sl.lower is None and sl.upper is None and isinstance(sl.step, ast.UnaryOp) \
                and isinstance(sl.step.operand, ast.Constant) and sl.step.operand.value == 1:
            return s[::-1]
        return None
    if isinstance(node, ast.Call) and not node.keywords:
        f = node.func
        if isinstance(f, ast.Name) and f.id == "chr" and len(node.args) == 1 \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, int):
            return chr(node.args[0].value) if 0 <= node.args[0].value < 0x110000 else None
        if isinstance(f, ast.Attribute) and f.attr == "join" and len(node.args) == 1 \
                and isinstance(node.args[0], (ast.List, ast.Tuple)):
            sep = const_str(f.value, holes)
            items = [const_str(e, holes) for e in node.args[0].elts]
            if sep is not None and None not in items:
                return sep.join(items)
    return None


def _targets(node):
    """Flatten an assignment target (tuples, lists, starred) into its parts."""
    if isinstance(node, (ast.Tuple, ast.List)):
        for e in node.elts:
            yield from _targets(e)
    elif isinstance(node, ast.Starred):
        yield from _targets(node.value)
    else:
        yield node


def _short(q):
    return "F." + q[len("torch.nn.functional."):] if q.startswith("torch.nn.functional.") else q


def _bare_strings(tree):
    """ids of the nodes of string statements that do nothing (docstrings, commented-out code)."""
    return {id(x) for n in ast.walk(tree) if isinstance(n, ast.Expr)
            and isinstance(n.value, (ast.Constant, ast.JoinedStr)) for x in ast.walk(n.value)}


# ---------------------------------------------------------------------------------------------
# the analysed candidate


class Candidate:
    """A parsed candidate with its names resolved. resolve(node) gives the set of dotted names an
    expression may stand for ('torch.cuda.synchronize', 'exec', 'local:self.ext'); empty when
    it is not a name (a call result, a literal)."""

    def __init__(self, tree, backend):
        self.tree = tree
        self.backend = backend
        self.nodes = list(ast.walk(tree))
        self.aliases = {}        # name -> set of dotted names it may stand for
        self.imports = []        # (line, dotted name) of everything imported
        self.star_modules = []   # from X import *
        self.relative_imports = []
        self.defs = set()        # names bound by def/class/parameters (shadow builtins)
        self.bound = set()       # every name the candidate binds
        self._collect_bindings()
        self._propagate_aliases()
        self.refs = self._collect_refs()
        self.calls = [(n, self.resolve(n.func)) for n in self.nodes if isinstance(n, ast.Call)]
        self.strings = self._collect_strings()
        self.classes = {n.name: n for n in self.nodes if isinstance(n, ast.ClassDef)}
        self.functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.model_new, self.model_new_alias = self._find_model_new()

    # -- bindings and aliases

    def _collect_bindings(self):
        for n in self.nodes:
            if isinstance(n, ast.Import):
                for a in n.names:  # import a.b binds a; import a.b as x binds x to a.b
                    top = a.name.split(".")[0]
                    self._import(n.lineno, a.asname or top, a.name if a.asname else top, a.name)
            elif isinstance(n, ast.ImportFrom):
                mod = "." * n.level + (n.module or "")
                if n.level:
                    self.relative_imports.append((n.lineno, mod))
                for a in n.names:
                    if a.name == "*":
                        self.star_modules.append(mod)
                        self.imports.append((n.lineno, mod))
                    else:
                        full = mod + "." + a.name if mod and not mod.endswith(".") else mod + a.name
                        self._import(n.lineno, a.asname or a.name, full, full)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.defs.add(n.name)
                self.bound.add(n.name)
            elif isinstance(n, ast.arg):
                self.defs.add(n.arg)
                self.bound.add(n.arg)
            elif isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                self.bound.add(n.id)
            elif isinstance(n, ast.ExceptHandler) and n.name:
                self.bound.add(n.name)

    def _import(self, line, name, target, module):
        self.aliases.setdefault(name, set()).add(target)
        self.imports.append((line, module))
        self.bound.add(name)

    def _alias_pairs(self):
        """(name, value expression) pairs that make name an alias of value."""
        for n in self.nodes:
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    yield from self._pair(t, n.value)
            elif isinstance(n, (ast.AnnAssign, ast.NamedExpr)) and n.value is not None:
                yield from self._pair(n.target, n.value)
            elif isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension)) and isinstance(n.target, ast.Name) \
                    and isinstance(n.iter, (ast.Tuple, ast.List, ast.Set)):
                for e in n.iter.elts:  # for m in (torch, time): m.x = ...
                    yield n.target.id, e
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                a = n.args  # def f(m=torch): m.x = ...
                pos = a.posonlyargs + a.args
                for arg, d in zip(pos[len(pos) - len(a.defaults):], a.defaults):
                    yield arg.arg, d
                for arg, d in zip(a.kwonlyargs, a.kw_defaults):
                    if d is not None:
                        yield arg.arg, d
            elif isinstance(n, (ast.With, ast.AsyncWith)):
                for item in n.items:
                    if isinstance(item.optional_vars, ast.Name):
                        yield item.optional_vars.id, item.context_expr

    @staticmethod
    def _pair(target, value):
        if isinstance(target, ast.Name):
            yield target.id, value
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts):
                yield from Candidate._pair(t, v)

    def _propagate_aliases(self):
        # Flow-insensitive: a name may stand for the union of everything assigned to it. A few
        # rounds reach chains like a = torch; b = a.cuda; c = b.Event.
        pairs = list(self._alias_pairs())
        for _ in range(6):
            changed = False
            for name, value in pairs:
                new = {q for q in self.resolve(value) if not q.startswith(LOCAL)}
                cur = self.aliases.setdefault(name, set())
                if new - cur and len(cur) < 32:
                    cur |= new
                    changed = True
            if not changed:
                break

    def resolve(self, node):
        if isinstance(node, ast.Name):
            out = set(self.aliases.get(node.id, ()))
            if node.id in BUILTIN_NAMES and node.id not in self.defs:
                out.add(node.id)
            if not out and node.id not in self.bound and self.star_modules:
                out = {m + "." + node.id for m in self.star_modules}
            return out or {LOCAL + node.id}
        if isinstance(node, ast.Attribute):
            return {q + "." + node.attr for q in self.resolve(node.value)}
        if isinstance(node, ast.Call):
            funcs = {_canon(q) for q in self.resolve(node.func)}
            arg0 = const_str(node.args[0]) if node.args else None
            if funcs & {"__import__", "importlib.import_module", "importlib.__import__"} and arg0:
                return {arg0}
            if "getattr" in funcs and len(node.args) >= 2 and const_str(node.args[1]):
                return {q + "." + const_str(node.args[1]) for q in self.resolve(node.args[0])}
            if funcs & {"globals", "locals"}:
                return {"<globals>"}
            if "vars" in funcs and node.args:
                return {q + ".__dict__" for q in self.resolve(node.args[0])}
            return set()
        if isinstance(node, ast.Subscript):
            key = const_str(node.slice)
            if key is None:
                return set()
            out = set()
            for q in self.resolve(node.value):
                if q == "sys.modules":
                    out.add(key)
                elif q == "<globals>":
                    out |= self.resolve(ast.Name(id=key, ctx=ast.Load()))
                elif q.endswith(".__dict__"):
                    out.add(q[: -len(".__dict__")] + "." + key)
                elif q in ("__builtins__", "builtins"):
                    out.add(q + "." + key)
            return out
        return set()

    @staticmethod
    def is_module(q):
        """q is not the candidate's own: an imported module (by statement or __import__), the
        builtins module, or something in one. (A plain builtin such as `input` is not: a
        variable of that name is the candidate's.)"""
        root = q.split(".")[0]
        return not q.startswith(LOCAL) and q != "<globals>" and (root == "__builtins__" or root not in BUILTIN_NAMES)

    # -- what the candidate refers to

    def _collect_refs(self):
        """(line, dotted name) of every import and every resolvable name, attribute, import call
        or subscript in the code."""
        refs = list(self.imports)
        for n in self.nodes:
            if isinstance(n, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
                for q in self.resolve(n):
                    if not q.startswith(LOCAL) and q != "<globals>":
                        refs.append((n.lineno, q))
        return refs

    def refs_under(self, prefixes):
        return [(line, q) for line, q in self.refs if _matches(_canon(q), prefixes)]

    def _collect_strings(self):
        """(line, text) of string literals that are values (kernel sources, paths), not bare
        statements such as docstrings."""
        bare = _bare_strings(self.tree)
        inner = set()
        out = []
        for n in self.nodes:
            if id(n) in bare or id(n) in inner:
                continue
            if isinstance(n, (ast.JoinedStr, ast.BinOp)):
                s = const_str(n, holes=True)
                if s is not None:
                    out.append((n.lineno, s))
                    if isinstance(n, ast.JoinedStr):
                        inner.update(id(v) for v in n.values)
            elif isinstance(n, ast.Constant) and isinstance(n.value, str):
                out.append((n.lineno, n.value))
        return out

    def strings_matching(self, pattern):
        rx = re.compile(pattern)
        return [(line, m.group(0)) for line, s in self.strings for m in [rx.search(s)] if m]

    # -- ModelNew

    def _find_model_new(self):
        """(ClassDef or None, expression ModelNew is assigned from or None). Top level only,
        including top-level if/try/with blocks."""
        body, cls, alias = list(self.tree.body), None, None
        while body:
            s = body.pop(0)
            if isinstance(s, ast.ClassDef) and s.name == "ModelNew":
                cls = s
            elif isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "ModelNew" for t in s.targets):
                alias = s.value
            elif isinstance(s, (ast.If, ast.Try, ast.With)):
                body += s.body + getattr(s, "orelse", []) + getattr(s, "finalbody", [])
                body += [x for h in getattr(s, "handlers", []) for x in h.body]
        if cls is None and isinstance(alias, ast.Name):
            cls = self.classes.get(alias.id)
        return cls, alias

    def own_classes(self, cls):
        """cls and the candidate's own classes it derives from, nearest first."""
        out, todo = [], [cls]
        while todo:
            k = todo.pop(0)
            if k in out:
                continue
            out.append(k)
            todo += [self.classes[b.id] for b in k.bases
                     if isinstance(b, ast.Name) and b.id in self.classes and not self.aliases.get(b.id)]
        return out

    def bases_of(self, cls):
        """Dotted names of the bases of cls and of the candidate's own classes it derives from."""
        return [_canon(q) for k in self.own_classes(cls) for b in k.bases for q in self.resolve(b)]


# ---------------------------------------------------------------------------------------------
# detectors: one per rule id; each returns [(line, message)]

DETECTORS = {}


def detector(rule_id):
    def register(fn):
        assert rule_id in RULES, rule_id
        DETECTORS[rule_id] = fn
        return fn
    return register


@detector("harness_access")
def _harness_access(c):
    # The harness shares the candidate's process; naming it is the first step of tampering
    # with it. KJUDGE_* environment settings count too.
    hits = [(line, f"references {q}") for line, q in c.refs if _canon(q).split(".")[0].lower().startswith("kjudge")]
    hits += [(line, f"relative import {m!r} (a candidate is a single file)") for line, m in c.relative_imports]
    hits += [(line, f"string mentions {s!r}") for line, s in c.strings_matching(r"(?i)\bkjudge\w*")]
    return hits


DYNAMIC_CALLS = ("exec", "eval", "compile", "__import__", "execfile", "breakpoint")
DYNAMIC_MODULES = ("importlib", "marshal", "runpy", "code", "codeop", "pickle", "_pickle", "dill", "cloudpickle",
                   "shelve", "types.CodeType", "types.FunctionType", "types.LambdaType", "zipimport", "pkgutil")
ESCAPE_ATTRS = ("__globals__", "__code__", "__subclasses__", "__builtins__", "__loader__", "__closure__")


def _decodes(node):
    """node decodes something on the way (base64, codecs, zlib, hex): a hidden payload."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and re.search(r"decode|decompress|fromhex|unhexlify", n.func.attr) for n in ast.walk(node))


@detector("dynamic_exec")
def _dynamic_exec(c):
    # Code built at run time is code this check never saw.
    hits = []
    for line, q in c.refs:
        if _canon(q) in DYNAMIC_CALLS:
            hits.append((line, f"uses {_canon(q)}"))
        elif _matches(q, DYNAMIC_MODULES):
            hits.append((line, f"uses {q}"))
        if q.split(".")[0] in ("builtins", "__builtins__"):
            hits.append((line, f"accesses the builtins ({q})"))
    for call, funcs in c.calls:
        funcs = {_canon(q) for q in funcs}
        if funcs & {"exec", "eval"} and any(_decodes(arg) for arg in call.args):
            hits.append((call.lineno, "executes a decoded payload"))
        if "getattr" in funcs and len(call.args) >= 2 and const_str(call.args[1]) is None \
                and any(c.is_module(q) for q in c.resolve(call.args[0])):
            hits.append((call.lineno, "getattr on a module with a computed name"))
        if funcs & {"globals", "vars"}:
            hits.append((call.lineno, f"calls {sorted(funcs & {'globals', 'vars'})[0]}()"))
    for n in c.nodes:
        if isinstance(n, ast.Attribute):
            if n.attr in ESCAPE_ATTRS:
                hits.append((n.lineno, f"accesses .{n.attr}"))
            elif n.attr in ("__dict__", "__getattribute__", "__getattr__") and \
                    any(c.is_module(q) for q in c.resolve(n.value)):
                hits.append((n.lineno, f"accesses a module's {n.attr}"))
    return hits


@detector("ctypes_memory")
def _ctypes_memory(c):
    # Raw pointers reach the harness's memory: timings, digests, audit positions.
    hits = [(line, f"uses {q}") for line, q in c.refs_under(("ctypes", "_ctypes", "cffi", "_cffi_backend", "mmap",
                                                              "numpy.ctypeslib"))]
    hits += [(line, f"string {s!r}") for line, s in c.strings_matching(
        r"/proc/[^/\s\"']*/(?:task/[^/\s]*/)?(?:mem|maps|smaps|pagemap)\b|/dev/k?mem\b")]
    hits += [(line, f"kernel source calls {s}") for line, s in c.strings_matching(
        r"\b(?:process_vm_readv|process_vm_writev|ptrace|mprotect|dlsym|dlopen)\s*\(")]
    return hits


FRAME_NAMES = ("sys._getframe", "sys._current_frames", "sys.settrace", "sys.setprofile", "sys.modules",
               "sys.meta_path", "sys.path_hooks", "sys.addaudithook", "inspect", "gc.get_objects",
               "gc.get_referrers", "gc.get_referents", "traceback.walk_stack", "traceback.walk_tb")
FRAME_ATTRS = ("f_back", "f_locals", "f_globals", "f_builtins", "tb_frame", "gi_frame", "cr_frame", "ag_frame",
               "f_trace")


@detector("frame_introspection")
def _frame_introspection(c):
    # Frames and the object graph lead to the harness's locals (expected digests, timers).
    hits = [(line, f"uses {q}") for line, q in c.refs_under(FRAME_NAMES)]
    hits += [(n.lineno, f"accesses .{n.attr}") for n in c.nodes
             if isinstance(n, ast.Attribute) and n.attr in FRAME_ATTRS]
    return hits


def _global_config(q):
    return _matches(q, ("torch.backends",))


def _attribute_writes(c):
    """(line, object expression, attribute, how) for every `obj.attr = / += / del` in the code."""
    for n in c.nodes:
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = n.targets if isinstance(n, (ast.Assign, ast.Delete)) else [n.target]
            how = "deletes" if isinstance(n, ast.Delete) else "assigns"
            for t in (x for t in targets for x in _targets(t)):
                if isinstance(t, ast.Attribute):
                    yield n.lineno, t.value, t.attr, how


@detector("timer_patch")
def _timer_patch(c):
    # Rebinding anything inside an imported module (torch.allclose, time.perf_counter,
    # torch.cuda.Event.elapsed_time, torch.Tensor.__eq__) changes what the harness runs.
    # The candidate's own objects (self.x, module-level names) are its business.
    hits = []

    def patched(target_value, attr, line, how):
        for q in c.resolve(target_value):
            if c.is_module(q) and not _global_config(q):
                hits.append((line, f"{how} {_canon(q)}.{attr}"))

    for line, obj, attr, how in _attribute_writes(c):
        patched(obj, attr, line, how)
    for call, funcs in c.calls:
        funcs = {_canon(q) for q in funcs}
        setter = funcs & {"setattr", "delattr"} or {q for q in funcs if q.endswith((".__setattr__", ".__delattr__"))}
        if setter and call.args:
            name = const_str(call.args[1]) if len(call.args) > 1 else None
            patched(call.args[0], name or "<computed>", call.lineno, "setattr")
        if any(_matches(q, ("unittest.mock", "mock")) for q in funcs):
            hits.append((call.lineno, "uses mock patching"))
        if any(_matches(q, ("torch.library.Library", "torch.library.impl")) for q in funcs) and call.args \
                and (const_str(call.args[0]) or "").startswith(("aten", "prims")):
            hits.append((call.lineno, "overrides torch's own ops through torch.library"))
    return hits


THREAD_MODULES = ("threading", "_thread", "multiprocessing", "torch.multiprocessing", "concurrent", "asyncio",
                  "subprocess", "atexit", "sched", "pty", "os.fork", "os.forkpty", "os.system", "os.popen",
                  "os.register_at_fork", "os.posix_spawn", "os.posix_spawnp", "os.kill", "signal.setitimer",
                  "signal.alarm", "signal.signal", "signal.pthread_kill")


@detector("threading")
def _threading(c):
    # Work that outlives the timed call (or runs beside it) is not timed.
    hits = [(line, q) for line, q in c.refs_under(THREAD_MODULES)]
    hits += [(line, q) for line, q in c.refs if re.fullmatch(r"os\.(spawn|exec)\w*", q)]
    return [(line, f"threads/processes are not allowed in a candidate ({q})") for line, q in hits]


TENSOR_BASES = ("torch.Tensor", "torch._C._TensorBase", "torch._C.TensorBase", "torch.nn.Parameter",
                "torch.nn.parameter.Parameter", "torch.nn.parameter.Buffer")
LAZY_NAMES = ("torch.utils._python_dispatch", "torch.overrides", "torch._C._DisableTorchFunction",
              "torch._C._DisableTorchFunctionSubclass", "torch._C._disabled_torch_function_impl")


@detector("tensor_subclass")
def _tensor_subclass(c):
    # A tensor subclass can compute (or fake) its values when the judge reads them, after the timer stopped.
    hits = []
    for cls in c.classes.values():
        if any(_matches(b, TENSOR_BASES) for b in c.bases_of(cls)):
            hits.append((cls.lineno, f"class {cls.name} derives from torch.Tensor"))
        for s in cls.body:
            names = [s.name] if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) else \
                [t.id for t in getattr(s, "targets", [getattr(s, "target", None)]) if isinstance(t, ast.Name)]
            for name in set(names) & {"__torch_function__", "__torch_dispatch__"}:
                hits.append((s.lineno, f"class {cls.name} defines {name}"))
    hits += [(line, f"uses {q}") for line, q in c.refs_under(LAZY_NAMES)]
    hits += [(n.lineno, f"uses .{n.attr}") for n in c.nodes
             if isinstance(n, ast.Attribute) and n.attr in ("_make_subclass", "_make_wrapper_subclass")]
    return hits


def _is_model(q):
    q = q[len(LOCAL):] if q.startswith(LOCAL) else q  # the candidate's own copy of Model counts too
    return q == "Model" or q.endswith(".Model")


@detector("inherits_reference")
def _inherits_reference(c):
    # ModelNew(Model) inherits the reference's forward: torch computes, not the candidate.
    alias = c.model_new_alias
    if alias is not None:
        if any(_is_model(_canon(q)) for q in c.resolve(alias)):
            return [(alias.lineno, "ModelNew is the reference class Model")]
        if isinstance(alias, ast.Call) and "type" in c.resolve(alias.func) and len(alias.args) >= 2 \
                and isinstance(alias.args[1], ast.Tuple) \
                and any(_is_model(_canon(q)) for e in alias.args[1].elts for q in c.resolve(e)):
            return [(alias.lineno, "ModelNew is built by type() on top of Model")]
    if c.model_new is not None and any(_is_model(b) for b in c.bases_of(c.model_new)):
        return [(c.model_new.lineno, "ModelNew derives from the reference class Model")]
    return []


def _keyword(call, name, position):
    """The argument passed as keyword name or at position, or None."""
    for k in call.keywords:
        if k.arg == name:
            return k.value
    return call.args[position] if len(call.args) > position else None


def _nonempty(node):
    return node is not None and not (isinstance(node, ast.Constant) and not node.value) \
        and not (isinstance(node, (ast.List, ast.Tuple)) and not node.elts)


def _loader_calls(c):
    return [(call, q) for call, funcs in c.calls for q in map(_canon, funcs) if q in LOADERS]


def _has_cpu_kernel(c):
    for call, q in _loader_calls(c):
        if q.endswith("load_inline") and _nonempty(_keyword(call, "cpp_sources", 1)):
            return True
        if q.endswith(".load") and _nonempty(_keyword(call, "sources", 1)):
            return True
    return False


def _has_gpu_kernel(c):
    for call, q in _loader_calls(c):
        if q.endswith("load_inline") and _nonempty(_keyword(call, "cuda_sources", 2)):
            return True
        if q.endswith(".load"):
            src = _keyword(call, "sources", 1)
            if src is not None and any(re.search(r"\.(cu|hip|mu)$", s or "")
                                       for s in map(const_str, ast.walk(src))):
                return True
    if c.strings_matching(r"__global__"):
        return True
    return any(_matches(_canon(q), CUDA_PY_KERNELS) for _, funcs in c.calls for q in funcs) or \
        any(_matches(_canon(q), CUDA_PY_KERNELS) for f in c.nodes
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) for d in f.decorator_list
            for q in c.resolve(d.func if isinstance(d, ast.Call) else d))


def _triton_kernels(c):
    """Functions decorated with @triton.jit (or @jit from triton), or passed to triton.jit()."""
    out = []
    for f in c.nodes:
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in f.decorator_list:
                if any(_canon(q) in TRITON_JIT for q in c.resolve(d.func if isinstance(d, ast.Call) else d)):
                    out.append(f)
    return out


def _has_triton_kernel(c):
    return bool(_triton_kernels(c)) or any(_canon(q) in TRITON_JIT for _, funcs in c.calls for q in funcs)


@detector("no_kernel_for_backend")
def _no_kernel_for_backend(c):
    # Without a kernel of the declared kind the candidate can only be running torch.
    found = {"cpu": _has_cpu_kernel, "triton": _has_triton_kernel}.get(c.backend, _has_gpu_kernel)(c)
    if found:
        return []
    want = {"cpu": "a load_inline/load call with C++ sources",
            "triton": "a @triton.jit function"}.get(c.backend, "load_inline with cuda_sources, a __global__ kernel "
                                                                "source or a cupy RawKernel")
    line = c.model_new.lineno if c.model_new is not None else 1
    return [(line, f"no {c.backend} kernel: expected {want}")]


@detector("no_model_new")
def _no_model_new(c):
    if c.model_new is None and c.model_new_alias is None:
        return [(1, "no top-level class ModelNew")]
    return []


@detector("torch_compile")
def _torch_compile(c):
    return [(line, f"uses {q}") for line, q in c.refs_under(
        ("torch.compile", "torch._dynamo", "torch._inductor", "torch.jit.script", "torch.jit.trace"))]


@detector("stream_api")
def _stream_api(c):
    hits = [(line, f"uses {q}") for line, q in c.refs_under(
        ("torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.ExternalStream", "torch.cuda.set_stream",
         "torch.cuda.StreamContext", "cupy.cuda.Stream"))]
    hits += [(line, f"kernel source uses {s}") for line, s in c.strings_matching(
        r"\b(?:cuda|hip|musa)StreamCreate\w*|getStreamFromPool|cudaLaunchHostFunc")]
    return hits


REDUCED_DTYPES = ("torch.float16", "torch.half", "torch.bfloat16", "torch.float8_e4m3fn", "torch.float8_e5m2",
                  "triton.language.float16", "triton.language.bfloat16", "torch.autocast", "torch.cuda.amp",
                  "torch.amp", "torch.cpu.amp")


@detector("precision_cast")
def _precision_cast(c):
    hits = [(call.lineno, f".{call.func.attr}()") for call, _ in c.calls
            if isinstance(call.func, ast.Attribute) and call.func.attr in ("half", "bfloat16")]
    hits += [(line, q) for line, q in c.refs_under(REDUCED_DTYPES)]
    hits += [(line, f"kernel source uses {s}") for line, s in c.strings_matching(
        r"\b(?:__half2?|__float2half\w*|__half2float|__nv_bfloat16\w*|__float2bfloat16\w*|__bf16|hip_bfloat16)\b")]
    return hits


@detector("torch_global_config")
def _torch_global_config(c):
    # Not a patch of torch's code, but it changes how torch's own ops compute (allow_tf32).
    hits = [(line, f"{how} {q}.{attr}") for line, obj, attr, how in _attribute_writes(c)
            for q in c.resolve(obj) if _global_config(q)]
    hits += [(call.lineno, f"calls {q}") for call, funcs in c.calls for q in funcs
             if q in ("torch.set_float32_matmul_precision", "torch.set_flush_denormal")]
    return hits


def _forward_functions(c):
    """ModelNew.forward and what it calls: methods on self, module-level functions and
    autograd.Function.apply (its forward). Triton kernels are kernel code, not torch."""
    methods = {}  # the candidate's own base classes first, so that ModelNew's methods override
    for cls in reversed(c.own_classes(c.model_new)):
        methods.update({s.name: s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))})
    kernels = {id(f) for f in _triton_kernels(c)}
    todo, seen = [methods["forward"]] if "forward" in methods else [], []
    while todo:
        f = todo.pop()
        if f in seen or id(f) in kernels:
            continue
        seen.append(f)
        for n in ast.walk(f):
            if not isinstance(n, ast.Call):
                continue
            fn = n.func
            if _is_self_attr(fn) and fn.attr in methods:
                todo.append(methods[fn.attr])
            elif isinstance(fn, ast.Name) and fn.id in c.functions:
                todo.append(c.functions[fn.id])
            elif isinstance(fn, ast.Attribute) and fn.attr == "apply" and isinstance(fn.value, ast.Name) \
                    and fn.value.id in c.classes:
                body = c.classes[fn.value.id].body
                todo += [s for s in body if isinstance(s, ast.FunctionDef) and s.name == "forward"]
    return seen, methods


def _extension_objects(c):
    """Dotted names of objects holding the candidate's compiled extension (ext = load_inline(...),
    self.ext = ext, self.ext = _build() where _build calls a loader): their methods are kernels."""
    factories = {name for name, f in c.functions.items()
                 if any(isinstance(n, ast.Call) and {_canon(q) for q in c.resolve(n.func)} & set(LOADERS)
                        for n in ast.walk(f))}
    ext = set()
    for _ in range(3):
        for n in c.nodes:
            if not isinstance(n, (ast.Assign, ast.AnnAssign)) or n.value is None:
                continue
            v = n.value
            funcs = {_canon(q) for q in c.resolve(v.func)} if isinstance(v, ast.Call) else set()
            is_ext = funcs & set(LOADERS) or funcs & {LOCAL + f for f in factories} \
                or c.resolve(v) & ext or any(_matches(q, CUDA_PY_KERNELS) for q in funcs)
            if is_ext:
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                    ext |= c.resolve(t)
    return ext


_TORCH_DTYPES = {"float", "float32", "float64", "double", "float16", "half", "bfloat16", "int", "int8", "int16",
                 "int32", "int64", "long", "short", "uint8", "bool", "complex64", "complex128", "float8_e4m3fn",
                 "float8_e5m2"}


def _is_dtype_move(c, call):
    args = list(call.args) + [k.value for k in call.keywords if k.arg == "dtype"]
    return any(q.startswith("torch.") and q.split(".")[-1] in _TORCH_DTYPES for a in args for q in c.resolve(a))


def _torch_op(q):
    """q names a torch function that computes (not plumbing)."""
    if not q.startswith("torch.") or _matches(q, PLUMBING_NAMESPACES):
        return False
    if q.startswith("torch.ops.") and not _matches(q, COMPUTE_OP_NAMESPACES):
        return False  # the candidate's own registered ops (TORCH_LIBRARY)
    return q.split(".")[-1] not in PLUMBING


def _is_self_attr(node):
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _torch_submodules(c, methods):
    """{attr: torch class} for self.attr = torch.nn.<Module>(...) in any method (self.conv = nn.Conv2d(...)):
    calling self.attr(x) in forward runs torch's layer."""
    out = {}
    for f in methods.values():
        for n in ast.walk(f):
            if not (isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)):
                continue
            kinds = [q for q in c.resolve(n.value.func) if q.startswith("torch.nn.")
                     and q.split(".")[-1][:1].isupper()
                     and q.split(".")[-1] not in ("Parameter", "ParameterList", "ParameterDict", "Buffer")]
            out.update({t.attr: kinds[0] for t in n.targets if kinds and _is_self_attr(t)})
    return out


@detector("torch_compute_in_forward")
def _torch_compute_in_forward(c):
    # A forward that calls torch's matmul/softmax/... is (partly) the reference again. Only a flag:
    # static analysis cannot tell a tensor from a list; the runtime dispatch trace decides.
    if c.model_new is None:
        return []
    funcs, methods = _forward_functions(c)
    ext = _extension_objects(c)
    nn_modules = _torch_submodules(c, methods)
    ops = []
    for f in funcs:
        for n in ast.walk(f):
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult):
                ops.append((n.lineno, "operator @"))
            if not isinstance(n, ast.Call):
                continue
            fn, quals = n.func, {_canon(q) for q in c.resolve(n.func)}
            torch_ops = sorted(q for q in quals if _torch_op(q))
            if torch_ops:
                ops.append((n.lineno, _short(torch_ops[0])))
            elif _is_self_attr(fn) and fn.attr in nn_modules:
                ops.append((n.lineno, f"self.{fn.attr} ({nn_modules[fn.attr]})"))
            elif isinstance(fn, ast.Attribute) and not quals & ext and not c.resolve(fn.value) & ext \
                    and not any(c.is_module(q) for q in quals):
                if fn.attr == "to" and _is_dtype_move(c, n):
                    ops.append((n.lineno, ".to(dtype)"))
                elif fn.attr in TENSOR_COMPUTE_METHODS:
                    ops.append((n.lineno, f".{fn.attr}()"))
    if not ops:
        return []
    names = list(dict.fromkeys(op for _, op in ops))
    return [(min(line for line, _ in ops), "ModelNew.forward computes with torch: " + ", ".join(names[:12])
             + (f" (+{len(names) - 12} more)" if len(names) > 12 else ""))]


@detector("get_inputs_redefined")
def _get_inputs_redefined(c):
    names = ("get_inputs", "get_init_inputs")
    hits = [(s.lineno, f"defines {s.name}") for s in c.tree.body
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name in names]
    hits += [(s.lineno, f"assigns {t.id}") for s in c.tree.body if isinstance(s, ast.Assign)
             for t in s.targets if isinstance(t, ast.Name) and t.id in names]
    return hits


@detector("imports_time")
def _imports_time(c):
    return [(line, f"imports {m}") for line, m in c.imports if _matches(m, ("time", "timeit"))]


# ---------------------------------------------------------------------------------------------
# entry point


def _finding(rule, severity, line, message):
    return {"rule": rule.id, "severity": severity, "verdict": rule.verdict, "cheat_class": rule.cheat_class,
            "line": line, "message": message}


def _severities(overrides):
    sev = {rid: r.severity for rid, r in RULES.items()}
    for rid, s in (overrides or {}).items():
        if rid not in RULES:
            raise ValueError(f"unknown static rule {rid!r}")
        if s not in SEVERITIES:
            raise ValueError(f"severity of {rid!r} must be one of {SEVERITIES}, not {s!r}")
        sev[rid] = s
    return sev


def _run_detectors(cand, sev):
    findings = []
    for rid, rule in RULES.items():
        if rid not in DETECTORS:
            continue
        hits = sorted(set(DETECTORS[rid](cand)))
        if hits:
            msgs = list(dict.fromkeys(m for _, m in hits))
            message = "; ".join(msgs[:8]) + (f"; (+{len(msgs) - 8} more)" if len(msgs) > 8 else "")
            findings.append(_finding(rule, sev[rid], hits[0][0], message))
    return findings


def check(source, backend, overrides=None):
    """Statically check a candidate. Returns {"version", "findings", "reject"}: one finding per
    rule that fired (first line, messages joined), in rule-table order; "reject" is the first
    finding with severity "reject", or None. Findings of rules turned "off" are still listed."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, not {backend!r}")
    sev = _severities(overrides)
    findings = []
    try:
        tree = ast.parse(source)
    except SyntaxError as e:  # nothing else can be checked
        findings.append(_finding(RULES["syntax_error"], sev["syntax_error"], e.lineno or 0,
                                 f"syntax error at line {e.lineno}: {e.msg}"))
    except (ValueError, RecursionError, MemoryError) as e:  # NUL bytes, absurd nesting
        findings.append(_finding(RULES["syntax_error"], sev["syntax_error"], 0, f"unparsable source: {e!r}"))
    else:
        try:
            findings += _run_detectors(Candidate(tree, backend), sev)
        except RecursionError:  # nesting the analysis cannot follow: no honest kernel needs it
            findings = [_finding(RULES["syntax_error"], sev["syntax_error"], 0, "source too deeply nested to check")]
    reject = next((f for f in findings if f["severity"] == "reject"), None)
    return {"version": VERSION, "findings": findings, "reject": reject}
