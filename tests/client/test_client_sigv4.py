"""iam=True: every request (each retry anew) carries a SigV4 signature for execute-api, made
with botocore's credential chain (fake credentials from tests/conftest.py's aws_env), and the
signature is right: recomputed here from what was sent, following AWS's documented steps."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import datetime
from urllib.parse import quote, urlsplit

import pytest
import requests
from chatmemory_client import ChatMemoryClient

API = "https://abc123.execute-api.eu-west-1.amazonaws.com/v1"
TURN = {"turn": {"turn": 1, "input": "hi"}}


def expected_signature(request: requests.PreparedRequest, secret: str, region: str) -> str:
    """The SigV4 signature of a sent request (AWS General Reference, "Create a signed AWS API
    request"), for a service other than S3: the path's segments are encoded twice."""
    url = urlsplit(request.url or "")
    amz_date = request.headers["X-Amz-Date"]
    authorization = request.headers["Authorization"]
    signed_names = authorization.split("SignedHeaders=")[1].split(",")[0].split(";")
    headers = {k.lower(): v.strip() for k, v in request.headers.items()}
    headers.setdefault("host", url.netloc)
    pairs = sorted(tuple(p.split("=", 1)) for p in url.query.split("&")) if url.query else []
    body = request.body or b""
    if isinstance(body, str):
        body = body.encode()
    canonical = "\n".join(
        [
            request.method or "",
            quote(url.path, safe="/~"),
            "&".join(f"{k}={v}" for k, v in pairs),
            "".join(f"{name}:{headers[name]}\n" for name in signed_names),
            ";".join(signed_names),
            hashlib.sha256(body).hexdigest(),
        ]
    )
    scope = f"{amz_date[:8]}/{region}/execute-api/aws4_request"
    to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()]
    )
    key = ("AWS4" + secret).encode()
    for part in (amz_date[:8], region, "execute-api", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


def signature_of(request: requests.PreparedRequest) -> str:
    return request.headers["Authorization"].split("Signature=")[1]


def test_requests_are_signed_for_execute_api_in_the_urls_region(http) -> None:
    http.add(
        "GET", f"{API}/memories/records?q=green%20tea%20%26%20cake&limit=5", json={"records": []}
    )
    http.add("POST", f"{API}/sessions/s%3A1/turns", json=TURN, status=201)
    client = ChatMemoryClient(API, iam=True)
    client.search_records("green tea & cake", limit=5)
    client.store_turn("s:1", "I like green tea", client_message_id="c1")
    for call in http.calls:
        sent = call.request
        authorization = sent.headers["Authorization"]
        assert authorization.startswith("AWS4-HMAC-SHA256 Credential=testing/")
        assert "/eu-west-1/execute-api/aws4_request" in authorization
        assert "host" in authorization.split("SignedHeaders=")[1].split(",")[0].split(";")
        assert sent.headers["X-Amz-Security-Token"] == "testing"
        assert signature_of(sent) == expected_signature(sent, "testing", "eu-west-1")
    assert json.loads(http.calls[1].request.body)["input"] == "I like green tea"


def test_each_retry_is_signed_anew(http, monkeypatch: pytest.MonkeyPatch) -> None:
    import botocore.auth

    clock = iter([datetime(2026, 1, 1, 12, 0, 0), datetime(2026, 1, 1, 12, 4, 0)])
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: next(clock))
    http.add("GET", f"{API}/deletions", status=503, json={"error": {"code": "x", "message": "y"}})
    http.add("GET", f"{API}/deletions", json={"complete": True})
    assert ChatMemoryClient(API, iam=True).deletion_status().complete
    first, second = (call.request for call in http.calls)
    assert (first.headers["X-Amz-Date"], second.headers["X-Amz-Date"]) == (
        "20260101T120000Z",
        "20260101T120400Z",
    )
    for sent in (first, second):
        assert signature_of(sent) == expected_signature(sent, "testing", "eu-west-1")


def test_the_region_argument_wins_for_a_custom_domain(http) -> None:
    http.add("GET", "https://memory.example.com/deletions", json={"complete": True})
    ChatMemoryClient("https://memory.example.com", iam=True, region="ap-south-1").deletion_status()
    sent = http.calls[0].request
    assert "/ap-south-1/execute-api/" in sent.headers["Authorization"]
    assert signature_of(sent) == expected_signature(sent, "testing", "ap-south-1")


def test_the_region_falls_back_to_botocores_configuration(http) -> None:
    http.add("GET", "https://memory.example.com/deletions", json={"complete": True})
    ChatMemoryClient("https://memory.example.com", iam=True).deletion_status()
    assert "/us-east-1/execute-api/" in http.calls[0].request.headers["Authorization"]


def test_iam_without_credentials_fails_at_once(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", raising=False)
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", raising=False)
    monkeypatch.delenv("AWS_WEB_IDENTITY_TOKEN_FILE", raising=False)
    with pytest.raises(ValueError, match="no AWS credentials"):
        ChatMemoryClient(API, iam=True)


def test_local_mode_requests_are_not_signed(http) -> None:
    http.add("GET", "http://127.0.0.1:8000/deletions", json={"complete": True})
    ChatMemoryClient("http://127.0.0.1:8000", user_id="bob").deletion_status()
    sent = http.calls[0].request
    assert "Authorization" not in sent.headers and "X-Amz-Date" not in sent.headers
