"""bench.locomo: the budget curve (each budget is what limits the memory put in the prompt), and
measuring a deployment's own models (--models environment)."""

from __future__ import annotations

import io
import json
import math
import os
import re
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from bench.locomo import bench_settings, build, mock_stores, run, run_chat, wordpiece_tokens


def _conversation() -> dict[str, object]:
    """A LoCoMo-shaped conversation: two sessions of walks by the harbour, each line its own."""
    conversation: dict[str, object] = {"speaker_a": "Ana", "speaker_b": "Ben"}
    for number, date in ((1, "1:56 pm on 8 May, 2023"), (2, "10:00 am on 9 June, 2023")):
        conversation[f"session_{number}_date_time"] = date
        conversation[f"session_{number}"] = [
            {
                "speaker": "Ana" if i % 2 == 0 else "Ben",
                "dia_id": f"D{number}:{i + 1}",
                "text": f"On walk {number}-{i} I took my greyhound Biscuit along the harbour "
                f"past boat number {100 * number + i} and counted {i + 3} gulls there.",
            }
            for i in range(30)
        ]
    return {
        "sample_id": "conv-t",
        "conversation": conversation,
        "qa": [
            {
                "question": "Where did Ana walk her greyhound Biscuit?",
                "answer": "along the harbour",
                "evidence": ["D1:1", "D2:3"],
                "category": 1,
            }
        ],
    }


def test_each_budget_of_the_curve_bounds_the_memory_and_is_not_capped_by_the_context(
    tmp_path: Path,
) -> None:
    from moto import mock_aws

    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([_conversation()]))
    with mock_aws():
        world = build(data)
        result = run_chat(world, ["thanks!"], budgets=[200, 1600])

    curve = result["budgets"]
    assert 100 < curve["200"]["memory_tokens_p95"] <= 200
    # Above half of the default model's 2,048 tokens: the curve's model has room for it.
    assert 1024 < curve["1600"]["memory_tokens_p95"] <= 1600
    assert result["memory_tokens_p95"] <= 400  # the configured budget, measured as before
    # The same memory read by a real tokenizer (the estimate is meant to count it high).
    assert 0 < result["memory_wordpiece_p95"] < result["memory_tokens_p95"]
    assert 0 < curve["1600"]["memory_wordpiece_p95"] < curve["1600"]["memory_tokens_p95"]


def test_a_real_tokenizers_count_is_the_texts_pieces_neither_padded_nor_cut() -> None:
    # The packaged tokenizer pads every text to 128 pieces: a short block counted 128.
    assert wordpiece_tokens("Hello world, how are you?") == 7
    assert wordpiece_tokens(" ".join(["camping"] * 300)) == 300
    assert wordpiece_tokens("") == 0


# --- --models environment: a deployment's models measured through the same pipeline ----------


class _Titan(BaseHTTPRequestHandler):
    """Bedrock runtime's InvokeModel for Titan text embeddings v2, in shape: a text's vector is
    its words hashed into the requested dimensions (so the same words land near each other)."""

    texts: list[str] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.texts.append(body["inputText"])
        vector = [0.0] * body["dimensions"]
        for word in re.findall(r"[a-z]+", body["inputText"].lower()):
            vector[zlib.crc32(word.encode()) % len(vector)] += 1.0
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        data = json.dumps({"embedding": [v / norm for v in vector], "inputTextTokenCount": 1})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data.encode())

    def log_message(self, *args: object) -> None:
        pass


def test_models_from_the_environment_make_every_vector_and_nothing_else_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Titan)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Titan.texts = []
    for name, value in {
        "EMBED_BACKEND": "bedrock",
        "EMBED_MODEL_ID": "amazon.titan-embed-text-v2:0",
        "EMBED_DIMENSION": "256",
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": f"http://127.0.0.1:{server.server_address[1]}",
        "AWS_ACCESS_KEY_ID": "shell",
        "AWS_SECRET_ACCESS_KEY": "shell",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",  # the benchmark sets it: restored after
    }.items():
        monkeypatch.setenv(name, value)
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([_conversation()]))
    try:
        result = run(data, [1, 5], models="environment")
    finally:
        server.shutdown()

    assert result["models"] == {
        "summaries": "extractive",  # TEXT_BACKEND unset: the offline ones
        "records": "patterns",
        "embeddings": "amazon.titan-embed-text-v2:0",
    }
    # The question and the sessions' windows were embedded by the configured service.
    assert "Where did Ana walk her greyhound Biscuit?" in _Titan.texts
    assert any("boat number 103" in text for text in _Titan.texts)
    assert result["overall"]["questions"] == 1
    # The shell's credentials and region stay in force (they reach AWS's model runtimes).
    assert os.environ["AWS_ACCESS_KEY_ID"] == "shell"
    assert os.environ["AWS_DEFAULT_REGION"] == "eu-west-1"


def test_offline_models_whatever_the_environment_and_only_its_model_settings_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EMBED_BACKEND", "bedrock")
    monkeypatch.setenv("TEXT_BACKEND", "bedrock")
    # Not a model's setting: what is measured is the shipped ranking and budget.
    monkeypatch.setenv("RECALL_WEIGHTS", "0,0,0,0")
    monkeypatch.setenv("MEMORY_TOKEN_BUDGET", "50")
    shipped = bench_settings("offline")
    assert shipped.embed_backend == "offline"
    configured = bench_settings("environment")
    assert (configured.embed_backend, configured.text_backend) == ("bedrock", "bedrock")
    assert configured.recall_weights == shipped.recall_weights
    assert configured.memory_token_budget == shipped.memory_token_budget
    with pytest.raises(ValueError):
        bench_settings("deployed")


@pytest.mark.parametrize(("models", "sent"), [("offline", False), ("environment", True)])
def test_model_runtimes_go_past_moto_only_with_the_environments_models(
    models: str, sent: bool
) -> None:
    """moto answers Bedrock runtime requests itself unless told to let them through: then the
    answer is the network's (here a handler after moto's, standing in for AWS: botocore takes
    the first answer its before-send handlers give)."""
    import boto3
    from botocore.awsrequest import AWSResponse

    from_aws = b'{"embedding": [1.0]}'
    reached: list[str] = []

    def network(request: object, **kwargs: object) -> AWSResponse:
        reached.append(str(getattr(request, "url", "")))
        return AWSResponse("", 200, {}, _Raw(from_aws))

    with mock_stores(models):
        client = boto3.client(
            "bedrock-runtime",
            region_name="us-east-1",
            aws_access_key_id="k",
            aws_secret_access_key="s",
        )
        client.meta.events.register_last("before-send", network)
        answer = client.invoke_model(modelId="amazon.titan-embed-text-v2:0", body=b"{}")
    assert (answer["body"].read() == from_aws) is sent
    assert reached[0].startswith("https://bedrock-runtime.us-east-1.amazonaws.com/model/")


class _Raw(io.BytesIO):
    """An HTTP body as botocore reads one (urllib3's response: read, and stream for content)."""

    def stream(self, **kwargs: object) -> list[bytes]:
        return [self.getvalue()]
