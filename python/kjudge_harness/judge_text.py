"""Text the candidate may see, with the judge taken out: its sandbox paths (/opt/kjudge, the
per-job build dirs, the extension cache), torch's install path and tensor printouts (their numbers
are secret inputs, or noise). The candidate's file is called "candidate.py" wherever it is."""
import re

CANDIDATE = "candidate.py"
_MAX_FEEDBACK = 3000

# Paths of the judge's sandboxes: its code, the per-job build dirs, the extension cache.
_JUDGE_PATHS = re.compile(r"/opt/kjudge/\S*|(?:/job/ext|/tmp/ext-run|/cache/ext|/ext)/[0-9a-f]{32}/|/cache/pch\b")
_TORCH_INCLUDE = re.compile(r"/\S*/site-packages/torch/include/|/\S*/dist-packages/torch/include/")
# A tensor's repr (its numbers: secret inputs or just noise): "tensor([[ 0.1, ...]], dtype=...)"
_TENSOR = re.compile(r"tensor\(\[[^()]*\](?:,\s*[a-z_]+=[^(),]*)*\)")
# Lines torch prints on every build, whatever the candidate wrote: noise in the text a model repairs
# from ("No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'": the build sandbox has no GPU).
_BUILD_NOISE = re.compile(r"^[ \t]*No CUDA runtime is found, using CUDA_HOME=.*(?:\n|$)", re.MULTILINE)


def drop_build_noise(text):
    return _BUILD_NOISE.sub("", text)


def scrub(text):
    text = _TENSOR.sub("tensor(...)", drop_build_noise(text))
    return _TORCH_INCLUDE.sub("torch/include/", _JUDGE_PATHS.sub("", text))


def clip(text, limit=_MAX_FEEDBACK):
    return text if len(text) <= limit else text[:limit] + "\n[... cut]"


def one_line(text, limit=300):
    line = next((x.strip() for x in text.splitlines() if x.strip()), "")
    return line if len(line) <= limit else line[:limit] + "..."


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None
