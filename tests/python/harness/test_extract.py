"""kjudge_harness.extract: picking the candidate out of a model completion (no torch needed)."""

from kjudge_harness.extract import extract_code, fenced_blocks

MODEL = "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n"


def fence(code, tag="python", f="```"):
    return f"{f}{tag}\n{code.rstrip()}\n{f}\n"


def test_single_python_block():
    code, msg = extract_code("Here is my kernel:\n\n" + fence(MODEL) + "\nIt is fast.")
    assert code == MODEL
    assert msg == "took block 1 of 1 (python)"


def test_last_block_defining_model_new_wins():
    draft = MODEL.replace("return x", "return x * 1")
    text = ("First attempt:\n" + fence(draft) + "Build it with:\n" + fence("pip install ninja", "bash")
            + "Corrected:\n" + fence(MODEL, "py") + "Usage:\n" + fence("m = ModelNew()\n"))
    code, msg = extract_code(text)
    assert code == MODEL
    assert msg == "took block 3 of 4 (py)"


def test_untagged_and_tilde_fences():
    code, msg = extract_code("~~~\n" + MODEL + "~~~\n")
    assert code == MODEL and msg == "took block 1 of 1 (untagged)"
    code, msg = extract_code(fence(MODEL, "python3", "~~~~"))
    assert code == MODEL and "python3" in msg


def test_non_python_tags_are_not_candidates():
    cuda = "__global__ void k() {}\n// class ModelNew\n"
    code, msg = extract_code(fence(cuda, "cuda") + fence(MODEL) + fence(cuda, "cpp"))
    assert code == MODEL and msg == "took block 2 of 3 (python)"


def test_missing_closing_fence_at_end():
    code, msg = extract_code("Final answer:\n```python\n" + MODEL)
    assert code == MODEL
    assert "unclosed" in msg


def test_unparsable_block_found_textually():
    broken = MODEL + "    def oops(:\n"
    code, msg = extract_code(fence(broken))
    assert code == broken and msg.startswith("took block 1 of 1")


def test_whole_completion_when_no_block_defines_it():
    code, msg = extract_code(MODEL)
    assert code == MODEL and msg == "took the whole completion (no fenced blocks)"


def test_no_code_at_all():
    assert extract_code("I cannot write this kernel, sorry.") == (None, "no code block found in the completion")
    assert extract_code("") == (None, "no code block found in the completion")


def test_blocks_without_model_new():
    code, msg = extract_code(fence("class Model(torch.nn.Module):\n    pass\n") + fence("print(1)\n", ""))
    assert code is None
    assert msg == "no code block defines class ModelNew (2 blocks found)"


def test_indented_fence_in_list_item():
    text = "1. the code:\n   ```python\n   import torch\n   class ModelNew(torch.nn.Module):\n       pass\n   ```\n"
    code, _ = extract_code(text)
    assert code == "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n"


def test_longer_fence_contains_shorter_one():
    inner = 'DOC = """\n```\nnot a fence end\n```\n"""\n' + MODEL
    blocks = fenced_blocks("````python\n" + inner + "````\n")
    assert len(blocks) == 1 and blocks[0].code == inner
