"""Loads a task's Python module from a file, with module-level size constants replaced (size
overrides for smoke runs). The replacement is done on the AST, so only real top-level
assignments `NAME = <int>` are touched."""
import ast
import importlib.util
import sys


class OverrideError(ValueError):
    pass


def apply_size_overrides(source, overrides, filename):
    if not overrides:
        return source
    tree = ast.parse(source, filename)
    seen = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in overrides:
                node.value = ast.copy_location(ast.Constant(int(overrides[name])), node.value)
                seen.add(name)
    missing = sorted(set(overrides) - seen)
    if missing:
        raise OverrideError(f"size override(s) {', '.join(missing)} name no module-level constant of the reference")
    return ast.unparse(ast.fix_missing_locations(tree))


def load_module(path, module_name, overrides=None):
    with open(path) as f:
        source = f.read()
    source = apply_size_overrides(source, overrides or {}, path)
    spec = importlib.util.spec_from_loader(module_name, loader=None, origin=path)
    module = importlib.util.module_from_spec(spec)
    module.__file__ = path
    sys.modules[module_name] = module
    exec(compile(source, path, "exec"), module.__dict__)
    return module
