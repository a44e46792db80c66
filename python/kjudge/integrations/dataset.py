"""KernelBench problems as prompt rows for a trainer's dataset: {"prompt", "reference",
"problem_id"}; the reference rides along as a column, which the reward reads back."""

from pathlib import Path

from kjudge.bench.layout import find_problems

PROMPT = ("You write custom kernels that replace PyTorch operators to make a model faster.\n\n"
          "The reference model:\n```python\n{reference}\n```\n\n"
          "Write ModelNew: the same inputs, outputs and init arguments as Model, with custom kernels "
          "({backend}) for the operators you replace. Reply with the complete ModelNew source in one "
          "```python code block.")


def problem_rows(problems, *, backend="cuda", template=PROMPT, conversational=False):
    """Rows for (problem_id, reference source or Path) pairs. conversational=True gives the prompt
    as chat messages ([{"role": "user", "content": ...}]), as TRL and verifiers take them."""
    rows = []
    for problem_id, reference in problems:
        ref = Path(reference).read_text() if isinstance(reference, Path) else str(reference)
        text = template.format(reference=ref.strip(), backend=backend)
        prompt = [{"role": "user", "content": text}] if conversational else text
        rows.append({"prompt": prompt, "reference": ref, "problem_id": str(problem_id)})
    return rows


def kernelbench_rows(dataset, *, levels=None, **kwargs):
    """Rows for every problem of a KernelBench dataset folder (level<L>/<P>_<Name>.py, or a clone
    of the KernelBench repository); problem ids are "L<level>/<file stem>"."""
    found = find_problems(Path(dataset))
    pairs = [("L%d/%s" % (level, path.stem), path) for (level, _p), path in sorted(found.items())
             if levels is None or level in levels]
    if not pairs:
        raise ValueError("no KernelBench problems (level<L>/<P>_<Name>.py) under %s" % dataset)
    return problem_rows(pairs, **kwargs)


def as_dataset(rows):
    """The rows as a Hugging Face datasets.Dataset (the `datasets` package is needed here only)."""
    from datasets import Dataset
    return Dataset.from_list(rows)
