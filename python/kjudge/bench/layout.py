"""Where problems and generations are on disk.

Dataset: KernelBench's layout, <dataset>/level<L>/<P>_<Name>.py (problem id P is the file name's
number, as KernelBench's dataset.py reads it). A clone of the KernelBench repository works as it
is: its problems are in <clone>/KernelBench/level<L>/, which is used when <clone> has no level dir. Generations: KernelBench's runs/<name>/ layout,
level_<L>_problem_<P>_sample_<S>_kernel.py (a ModelNew file); a .md or .txt of the same name
(with or without _kernel) is a model's raw completion, whose code block the judge extracts.
Repair turns: level_<L>_problem_<P>_sample_<S>_turn_<T>_kernel.py is sample S's answer at turn T
(a repair from the judge's feedback; no _turn_ is turn 0, the first answer)."""

import re
from dataclasses import dataclass
from pathlib import Path

_LEVEL_DIR = re.compile(r"level(\d+)")
_PROBLEM_FILE = re.compile(r"(\d+)_.*\.py")
_GENERATION = re.compile(r"level_(\d+)_problem_(\d+)_sample_(\d+)(?:_turn_(\d+))?(?:_kernel)?\.(py|md|txt)")


@dataclass(frozen=True)
class Sample:
    level: int
    problem: int
    sample: int
    path: Path
    is_completion: bool  # raw model output rather than a ModelNew file
    turn: int = 0        # 0: the first answer; T: its repair at turn T

    def key(self, mode: str) -> str:
        first = "%s/%d/%d/%d" % (mode, self.level, self.problem, self.sample)
        return first if self.turn == 0 else "%s/t%d" % (first, self.turn)


def _level_dirs(folder: Path):
    return [d for d in sorted(folder.iterdir()) if d.is_dir() and _LEVEL_DIR.fullmatch(d.name)]


def dataset_root(dataset: Path) -> Path:
    """The folder holding level<L>/: the dataset itself, or KernelBench/ inside a KernelBench clone."""
    dataset = Path(dataset)
    if not dataset.is_dir():
        raise ValueError("no dataset folder at %s" % dataset)
    clone = dataset / "KernelBench"
    if not _level_dirs(dataset) and clone.is_dir() and _level_dirs(clone):
        return clone
    return dataset


def find_problems(dataset: Path):
    """{(level, problem_id): path} of every reference in the dataset (or a KernelBench clone)."""
    out = {}
    for level_dir in sorted(dataset_root(dataset).iterdir()):
        m = _LEVEL_DIR.fullmatch(level_dir.name)
        if not (m and level_dir.is_dir()):
            continue
        for f in sorted(level_dir.iterdir()):
            pm = _PROBLEM_FILE.fullmatch(f.name)
            if pm:
                out[(int(m.group(1)), int(pm.group(1)))] = f
    return out


def find_generations(generations: Path):
    """Samples in the folder, sorted by (level, problem, sample, turn). Two files for the same
    sample and turn (a .py and a .md) are an error: which one to judge would be a guess."""
    found = {}
    for f in sorted(Path(generations).iterdir()):
        m = _GENERATION.fullmatch(f.name)
        if not (m and f.is_file()):
            continue
        s = Sample(int(m.group(1)), int(m.group(2)), int(m.group(3)), f, m.group(5) != "py", int(m.group(4) or 0))
        ident = (s.level, s.problem, s.sample, s.turn)
        if ident in found:
            raise ValueError("two generations for level %d problem %d sample %d turn %d: %s and %s"
                             % (*ident, found[ident].path.name, f.name))
        found[ident] = s
    return [found[k] for k in sorted(found)]
