"""A sentence-transformers model (a BERT, mean pooling, unit vectors) run by onnxruntime instead
of torch: the same vectors (cosine 0.9999999 or more against `SentenceTransformer.encode`,
tests/unit/test_onnx_encoder.py) at about a third of the CPU a message, with no torch in the
process once the model's ONNX file exists.

The ONNX file is made once from the weights an installed package holds (torch's exporter and
`onnx`, about 2 s) and kept in a cache folder (embedder.cache_root), named by the weights'
folder, size and time: a package upgrade makes a new one. It is written beside its name
and renamed, so a process that stops halfway leaves no half file, and two processes that make it
at once both end with a whole one. A file that onnxruntime cannot load is made again.

Why: every chat message is embedded before the model is asked (auto-recall), and on two cores
torch's forward pass took 33 ms p50 of a streamed turn's 48 ms before the model (issue 40,
bench/RESULTS.md "Streamed answers in local mode")."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from chatmemory.errors import ModelUnavailable

# The exporter's inputs and output, by name.
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_OUTPUT = "last_hidden_state"
# Texts of about the same length go together (sorted first), so a batch pads little; small
# batches pad less still and were fastest on one thread (300 texts: 6.4 s in 8s, 7.8 s in 32s).
BATCH = 16
_export_lock = threading.RLock()


def onnx_path(folder: Path, root: Path, name: str) -> Path:
    """Where the ONNX file of the sentence-transformers model `name` in `folder` is kept under
    `root` (made or not): named by the weights' folder, size and time."""
    weights = (folder / "model.safetensors").stat()
    stamp = f"{folder.resolve()}:{weights.st_size}.{int(weights.st_mtime)}"
    return root / f"{name}-{hashlib.sha256(stamp.encode()).hexdigest()[:16]}.onnx"


def onnx_file(folder: Path, root: Path, name: str) -> Path:
    """The model's ONNX file (onnx_path), made when it is missing."""
    target = onnx_path(folder, root, name)
    if not target.is_file():
        with _export_lock:
            if not target.is_file():  # not made by another thread meanwhile
                export(folder, target)
    return target


def export(folder: Path, target: Path) -> None:
    """Write the model's transformer (up to its last hidden state) to `target` as ONNX, through
    a file beside it renamed at the end."""
    with _export_lock:  # one export at a time in a process (each loads the weights)
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, scratch = tempfile.mkstemp(prefix=".exporting-", suffix=".onnx", dir=target.parent)
        os.close(handle)
        try:
            _export(folder, Path(scratch))
            os.replace(scratch, target)
        finally:
            Path(scratch).unlink(missing_ok=True)


def _export(folder: Path, to: Path) -> None:
    try:
        import torch
        from transformers import AutoModel
    except ImportError as error:
        raise ModelUnavailable(
            f"making the embedder's ONNX file needs `pip install torch==2.13.0 transformers "
            f"onnx` once ({error})"
        ) from error

    class Hidden(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return out.last_hidden_state

    # Eager attention: the traced graph then holds no branch taken on the example's shape.
    model = AutoModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    example = torch.ones((2, 8), dtype=torch.int64)
    axes = {name: {0: "batch", 1: "tokens"} for name in (*_INPUTS, _OUTPUT)}
    with torch.inference_mode(), warnings.catch_warnings():
        # The tracer's notes on branches it fixed: none depends on the batch's shape here
        # (tests/unit/test_onnx_encoder.py compares padded batches and single texts).
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Hidden(model),
            (example, example, torch.zeros_like(example)),
            str(to),
            input_names=list(_INPUTS),
            output_names=[_OUTPUT],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )


class OnnxSentenceEncoder:
    """Unit vectors of texts, as `SentenceTransformer(folder).encode(texts,
    normalize_embeddings=True)` gives them, for a model of mean pooling: its tokenizer
    (truncated at the model's max_seq_length), its transformer in onnxruntime on one thread
    (the caller's: no thread pool spinning beside DynamoDB Local), the mean of the tokens' last
    hidden states, normalised."""

    def __init__(self, folder: Path, root: Path, name: str) -> None:
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as error:
            raise ModelUnavailable(
                f"the offline embedder needs `pip install onnxruntime tokenizers` ({error})"
            ) from error
        pooling = json.loads((folder / "1_Pooling" / "config.json").read_text())
        if not pooling.get("pooling_mode_mean_tokens"):
            raise ModelUnavailable(f"{folder.name} does not pool by the tokens' mean")
        settings = json.loads((folder / "sentence_bert_config.json").read_text())
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(int(settings["max_seq_length"]))
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the batch's longest
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        path = onnx_file(folder, root, name)
        try:
            self.session = onnxruntime.InferenceSession(
                str(path), options, providers=["CPUExecutionProvider"]
            )
        except Exception:  # onnxruntime's own errors: a file cut short, say
            export(folder, path)
            self.session = onnxruntime.InferenceSession(
                str(path), options, providers=["CPUExecutionProvider"]
            )

    def encode(self, texts: Sequence[str]) -> Any:
        """A (len(texts), dimension) float32 array of unit rows, in the order of `texts`."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        rows: list[Any] = [None] * len(texts)
        for start in range(0, len(order), BATCH):
            part = order[start : start + BATCH]
            for i, row in zip(part, self._batch([texts[i] for i in part]), strict=True):
                rows[i] = row
        return np.stack(rows)

    def _batch(self, texts: list[str]) -> Any:
        encoded = self.tokenizer.encode_batch(texts)
        feed = {
            "input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64),
        }
        [hidden] = self.session.run([_OUTPUT], feed)
        mask = feed["attention_mask"][..., None].astype(np.float32)
        mean = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(mean, axis=1, keepdims=True)
        return mean / np.clip(norms, 1e-12, None)
